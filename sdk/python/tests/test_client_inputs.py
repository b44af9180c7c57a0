"""A client's own inputs of the wrong kind are refused clearly, before anything is sent.

An api_key that is not a str went out as its str() (5 as "5", b"k" as "b'k'"), and a header whose value is
None raised a TypeError from inside http.client. Against the scripted fake server.
"""

from __future__ import annotations

import unittest

import support  # noqa: F401  (sets sys.path and NO_PROXY)
from unit_base import FakeServerTest

import quiver
from quiver import AgentClient


class TestClientInputs(FakeServerTest):
    def test_api_key_must_be_a_str(self) -> None:
        for value in (5, b"qv_key", ["qv_key"]):
            with self.subTest(value=value):
                with self.assertRaises(quiver.InvalidRequestError) as ctx:
                    AgentClient(api_key=value, base_url=self.fake.url)
                self.assertIn("api_key must be a str", str(ctx.exception))
                self.assertNotIn("qv_key", str(ctx.exception))  # never the value: it may be a secret
        self.assertEqual(self.fake.requests, [])

    def test_a_header_without_a_value_is_refused(self) -> None:
        client = AgentClient(api_key="k", base_url=self.fake.url, default_headers={"X-Trace": None})
        self.assert_refused(lambda: client.tools.list(), "X-Trace", "no value")


if __name__ == "__main__":
    unittest.main()
