"""The fake-server test case the unit test modules share (not a test module itself)."""

from __future__ import annotations

import json
import unittest

import support  # noqa: F401  (sets sys.path and NO_PROXY)
from support import ScriptedServer

import quiver
from quiver import AgentClient


class FakeServerTest(unittest.TestCase):
    """A client against a scripted fake server; no real waiting between retries."""

    def setUp(self) -> None:
        self.fake = ScriptedServer()
        self.addCleanup(self.fake.close)
        self.client = self.make_client()

    def make_client(self, **kw) -> AgentClient:
        client = AgentClient(api_key="k-test", base_url=self.fake.url + "/", **kw)
        self.delays = []
        client._transport.sleep = self.delays.append  # no real waiting in unit tests
        return client

    def body(self, i: int = -1):
        raw = self.fake.requests[i]["body"]
        return json.loads(raw) if raw else None

    def assert_refused(self, send, *fragments: str) -> None:
        with self.assertRaises(quiver.InvalidRequestError) as ctx:
            send()
        err = ctx.exception
        self.assertIsInstance(err, ValueError)
        self.assertIsInstance(err, quiver.QuiverError)
        self.assertNotIsInstance(err, quiver.APIConnectionError)
        self.assertIsNone(err.status)
        for fragment in fragments:
            self.assertIn(fragment, str(err))
        self.assertEqual(self.fake.requests, [])
        self.assertEqual(self.delays, [])
