"""The returned objects' declared fields against the server's own OpenAPI document.

Every field the server's schema marks required is in every answer, so the SDK's typed class of that object
(``py.typed``) declares it: a user's type checker and editor know ``tool.updated_at`` is a ``str``.
"""

from __future__ import annotations

import json
import unittest
import urllib.request

import support

import quiver

ENV: "support.Env"

# The OpenAPI schema of each object the SDK returns, and the class it is returned as.
CLASSES = {
    "Tool": quiver.Tool,
    "Agent": quiver.Agent,
    "Action": quiver.Action,
    "AvailableTool": quiver.AvailableTool,
    "ConfigurationStep": quiver.ConfigurationStep,
    "CallResult": quiver.CallResult,
    "CallLogEntry": quiver.CallLogEntry,
    "IdempotencyKeyState": quiver.IdempotencyKeyState,
}


def setUpModule() -> None:
    global ENV
    ENV = support.env()


class TestDeclaredFields(unittest.TestCase):
    def test_every_required_field_is_declared(self) -> None:
        with urllib.request.urlopen(ENV.base_url + "/openapi.json", timeout=10) as r:
            schemas = json.load(r)["components"]["schemas"]
        for schema, cls in CLASSES.items():
            with self.subTest(schema=schema):
                declared = set()
                for klass in cls.__mro__:
                    declared.update(getattr(klass, "__annotations__", {}))
                missing = sorted(set(schemas[schema].get("required", [])) - declared)
                self.assertEqual(missing, [], f"{cls.__name__} does not declare {missing}")

    def test_every_optional_field_is_declared_or_documented(self) -> None:
        # A field only some answers carry is declared, or named in the class's docstring (read with .get()).
        with urllib.request.urlopen(ENV.base_url + "/openapi.json", timeout=10) as r:
            schemas = json.load(r)["components"]["schemas"]
        schemas["AvailableTool"]["properties"].update(schemas["CatalogEntry"]["properties"])
        for schema, cls in CLASSES.items():
            with self.subTest(schema=schema):
                declared = set()
                for klass in cls.__mro__:
                    declared.update(getattr(klass, "__annotations__", {}))
                doc = cls.__doc__ or ""
                props = schemas[schema]["properties"]
                missing = sorted(f for f in props if f not in declared and f"``{f}``" not in doc)
                self.assertEqual(missing, [], f"{cls.__name__} neither declares nor documents {missing}")

    def test_a_tool_has_them(self) -> None:
        client = quiver.AgentClient(api_key=ENV.api_key, base_url=ENV.base_url, timeout=30)
        tool = client.tools.create(mcp_tool="browser")
        self.assertEqual(tool.type, "builtin")
        self.assertIsInstance(tool.updated_at, str)


if __name__ == "__main__":
    unittest.main()
