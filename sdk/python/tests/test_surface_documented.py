"""The README's surface against the package's: every public name is documented, every documented call exists.

No server needed: this reads README.md and the ``quiver`` package.
"""

from __future__ import annotations

import inspect
import re
import unittest

import support

import quiver

README = (support.SDK_ROOT / "README.md").read_text(encoding="utf-8")

RESOURCES = {
    "tools": quiver.ToolsResource,
    "agents": quiver.AgentsResource,
    "idempotency_keys": quiver.IdempotencyKeysResource,
}


def _public(cls: type) -> list:
    return [n for n, v in vars(cls).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))]


class TestSurfaceDocumented(unittest.TestCase):
    def test_every_export_is_in_the_readme(self) -> None:
        missing = [n for n in quiver.__all__ if not re.search(r"`[^`]*\b" + re.escape(n) + r"\b[^`]*`", README)]
        self.assertEqual(missing, [], "exported by quiver but not named in README.md")

    def test_every_public_method_is_in_the_readme(self) -> None:
        missing = []
        classes = (quiver.AgentClient, quiver.QuiverObject, quiver.Page, quiver.CallResult, quiver.QuiverError)
        for cls in (*classes, *RESOURCES.values()):
            missing += [f"{cls.__name__}.{n}" for n in _public(cls) if not re.search(r"\." + n + r"\b", README)]
        self.assertEqual(missing, [], "public but not in README.md")

    def test_every_documented_call_exists(self) -> None:
        for resource, method in set(re.findall(r"client\.(tools|agents|idempotency_keys)\.(\w+)\(", README)):
            with self.subTest(call=f"client.{resource}.{method}"):
                self.assertTrue(callable(getattr(RESOURCES[resource], method, None)))
        # The surface table's `client.agents.get(id)` / `list()` / `list_page()` / `delete(id)` row.
        for method in re.findall(r"` / `(\w+)\(", README):
            with self.subTest(method=method):
                self.assertTrue(any(callable(getattr(cls, method, None)) for cls in RESOURCES.values()), method)

    def test_documented_keywords_exist(self) -> None:
        # "client.tools.call(tool, action=..., arguments=..., idempotency_key=None, timeout=None)" and the like:
        # each keyword the README gives a call is a parameter of that method.
        for resource, method, args in re.findall(r"client\.(tools|agents)\.(\w+)\(([^)`]*)\)", README):
            params = inspect.signature(getattr(RESOURCES[resource], method)).parameters
            for name in re.findall(r"(\w+)=", args):
                with self.subTest(call=f"client.{resource}.{method}", keyword=name):
                    self.assertIn(name, params)

    def test_documented_signatures_say_which_parameters_are_keyword_only(self) -> None:
        # In the surface table, a parameter after `*` is keyword-only in the code and one before it is not
        # (`id` and `tool` stand for the positional parameter at their place).
        rows = re.findall(r"^\| `client\.(tools|agents|idempotency_keys)\.(\w+)\(([^)`]*)\)`", README, re.M)
        self.assertGreater(len(rows), 15)
        for resource, method, args in rows:
            params = list(inspect.signature(getattr(RESOURCES[resource], method)).parameters.values())[1:]
            tokens = [t.strip() for t in args.split(",") if t.strip()]
            keyword_only = False
            for index, token in enumerate(tokens):
                with self.subTest(call=f"client.{resource}.{method}", parameter=token):
                    if token == "*":
                        keyword_only = True
                        continue
                    name = token.split("=")[0]
                    if keyword_only:
                        self.assertIn(name, {p.name for p in params})
                        self.assertEqual(next(p for p in params if p.name == name).kind, inspect.Parameter.KEYWORD_ONLY)
                    else:
                        self.assertEqual(params[index].kind, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                        if "=" in token:
                            self.assertEqual(params[index].name, name)


if __name__ == "__main__":
    unittest.main()
