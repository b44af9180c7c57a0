"""An Idempotency-Key among default_headers is checked as a call's key is.

API.md: HTTP strips leading and trailing whitespace from header values, so "abc " arrives as "abc": the
SDKs refuse such keys client-side. tools.call(idempotency_key=...) did, but the same header given in
default_headers was sent unchecked: "abc " went out and the server saw (and stored) "abc", a key the
caller never gave. It is now refused when the client is made, whatever the header name's case.
"""

from __future__ import annotations

import quiver
from quiver import AgentClient

from unit_base import FakeServerTest


class DefaultIdempotencyKeyTest(FakeServerTest):
    def test_bad_default_key_is_refused_when_the_client_is_made(self) -> None:
        for name in ("Idempotency-Key", "idempotency-key", "IDEMPOTENCY-KEY"):
            for bad in ("abc ", " abc", "", "a" * 256, "cl\u00e9", "a\tb"):
                with self.subTest(name=name, key=bad):
                    with self.assertRaises(quiver.InvalidIdempotencyKeyError):
                        AgentClient(api_key="k", base_url=self.fake.url, default_headers={name: bad})
        with self.assertRaises(TypeError):
            AgentClient(api_key="k", base_url=self.fake.url, default_headers={"Idempotency-Key": 5})
        self.assertEqual(self.fake.requests, [])

    def test_good_default_key_is_sent_and_a_calls_own_key_wins(self) -> None:
        client = self.make_client(default_headers={"idempotency-key": "kd 1"})
        self.fake.push(200, {"call_id": "c", "tool": 1, "action": "a", "is_error": False, "result": {}})
        self.fake.push(200, {"call_id": "c", "tool": 1, "action": "a", "is_error": False, "result": {}})
        client.tools.call(1, action="a")
        client.tools.call(1, action="a", idempotency_key="kc")
        self.assertEqual(self.fake.requests[0]["headers"]["Idempotency-Key"], "kd 1")
        self.assertEqual(self.fake.requests[1]["headers"]["Idempotency-Key"], "kc")
