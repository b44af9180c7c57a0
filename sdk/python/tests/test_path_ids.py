"""An ID that goes in a URL path is an integer (or its decimal digits): anything else is refused before sending.

A string such as "calls" made GET /agents/custom-tools/calls/, the call log, which came back as a Tool; and
agents.get("custom-tools") answered the tool list as an Agent. Against the scripted fake server.
"""

from __future__ import annotations

import unittest

import support  # noqa: F401  (sets sys.path and NO_PROXY)
from unit_base import FakeServerTest

import quiver


class TestPathIds(FakeServerTest):
    def sends(self):
        c = self.client
        return [
            ("tools.get", lambda v: c.tools.get(v)),
            ("tools.delete", lambda v: c.tools.delete(v)),
            ("tools.actions", lambda v: c.tools.actions(v)),
            ("tools.reset_config", lambda v: c.tools.reset_config(v)),
            ("tools.provide_config", lambda v: c.tools.provide_config(v, user_response={})),
            ("tools.calls", lambda v: c.tools.calls(tool=v)),
            ("tools.calls_page", lambda v: c.tools.calls_page(tool=v)),
            ("agents.get", lambda v: c.agents.get(v)),
            ("agents.update", lambda v: c.agents.update(v, name="x")),
            ("agents.delete", lambda v: c.agents.delete(v)),
        ]

    def test_a_string_that_is_not_digits_is_refused(self) -> None:
        for value in ("calls", "call", "custom-tools", "tools", "available", "1/2", "1?x=2", "-1", "1.0", "1e3",
                      "١٢", "0x10", {"id": "calls"}):
            for name, send in self.sends():
                with self.subTest(request=name, value=value):
                    with self.assertRaises(TypeError) as ctx:
                        send(value)
                    self.assertIn("integer ID", str(ctx.exception))
        self.assertEqual(self.fake.requests, [])

    def test_digits_and_integers_are_sent(self) -> None:
        self.fake.push(200, {"id": 12})
        self.assertEqual(self.client.tools.get("12").id, 12)
        self.fake.push(200, {"id": 12})
        self.assertEqual(self.client.agents.get(" 12 ").id, 12)
        self.fake.push(200, {"calls": [], "next_cursor": None})
        self.client.tools.calls(tool="12")
        self.assertEqual([r["path"] for r in self.fake.requests],
                         ["/api/v1/agents/custom-tools/12/", "/api/v1/agents/12/",
                          "/api/v1/agents/custom-tools/calls/?tool=12"])

    def test_a_catalog_name_must_be_a_string(self) -> None:
        for value in (None, 5, b"tavily", ["tavily"]):
            with self.subTest(value=value):
                with self.assertRaises(TypeError) as ctx:
                    self.client.tools.get_available(value)
                self.assertIn("catalog name", str(ctx.exception))
        self.assertEqual(self.fake.requests, [])


if __name__ == "__main__":
    unittest.main()
