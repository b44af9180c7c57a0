"""Two rules every error follows: which class a 409/504 tool_outcome_unknown is, and did_nothing.

Against the scripted fake server (no Go toolchain needed).
"""

from __future__ import annotations

import unittest

import support  # noqa: F401  (sets sys.path and NO_PROXY)
from support import ScriptedServer
from unit_base import FakeServerTest

import quiver
from quiver import AgentClient

Base = FakeServerTest

UNKNOWN = {"error": "tool_outcome_unknown", "message": "lost"}


class TestOutcomeUnknownClasses(Base):
    def test_409_form_is_a_conflict_and_an_outcome_unknown(self) -> None:
        # A later answer for a terminal key is a 409: `except ConflictError` (every 409) catches it, and so
        # does `except ToolOutcomeUnknownError` (both forms).
        self.fake.push(409, UNKNOWN)
        with self.assertRaises(quiver.ConflictError) as ctx:
            self.client.tools.call(1, action="a", idempotency_key="op")
        err = ctx.exception
        self.assertIsInstance(err, quiver.ToolOutcomeUnknownError)
        self.assertIsInstance(err, quiver.ToolOutcomeUnknownConflictError)
        self.assertEqual((err.status, err.code), (409, "tool_outcome_unknown"))
        self.assertEqual(len(self.fake.requests), 1)  # still terminal: never retried

    def test_504_form_is_not_a_conflict(self) -> None:
        self.fake.push(504, UNKNOWN)
        with self.assertRaises(quiver.ToolOutcomeUnknownError) as ctx:
            self.client.tools.call(1, action="a", idempotency_key="op")
        self.assertNotIsInstance(ctx.exception, quiver.ConflictError)
        self.assertIs(type(ctx.exception), quiver.ToolOutcomeUnknownError)
        self.assertEqual(len(self.fake.requests), 1)

    def test_flymyai_name_exports_it(self) -> None:
        import flymyai

        self.assertIs(flymyai.ToolOutcomeUnknownConflictError, quiver.ToolOutcomeUnknownConflictError)


class TestDidNothing(Base):
    # API.md: each of these answers says the request was refused before anything was sent to the tool (or,
    # for unavailable, that nothing was dispatched); the key, if any, holds no outcome.
    NOTHING = [
        (400, "bad_request"), (400, "invalid_json"), (400, "invalid_idempotency_key"),
        (400, "idempotency_key_required"), (401, "unauthorized"), (403, "forbidden"), (404, "not_found"),
        (409, "tool_not_configured"), (413, "payload_too_large"), (422, "validation_error"),
        (422, "invalid_arguments"), (429, "rate_limited"), (502, "tool_unreachable"),
        (502, "upstream_auth_failed"), (502, "upstream_refused"), (503, "unavailable"),
    ]
    # These do not: the key's earlier request ran or may have run, or the server may have acted.
    MAYBE = [
        (409, "idempotency_key_reused"), (409, "request_in_progress"), (409, "tool_outcome_unknown"),
        (504, "tool_outcome_unknown"), (500, "internal"),
    ]

    def error_for(self, status, body, **kw):
        client = self.make_client(max_retries=0)
        self.fake.push(status, body)
        with self.assertRaises(quiver.QuiverError) as ctx:
            client.tools.call(1, action="a", idempotency_key="op", **kw)
        return ctx.exception

    def test_every_code_of_api_md(self) -> None:
        for status, code in self.NOTHING:
            with self.subTest(code=code):
                self.assertIs(self.error_for(status, {"error": code, "message": "m"}).did_nothing, True)
        for status, code in self.MAYBE:
            with self.subTest(code=code, status=status):
                self.assertIs(self.error_for(status, {"error": code, "message": "m"}).did_nothing, False)

    def test_answers_without_quivers_code_prove_nothing(self) -> None:
        for status in (400, 404, 409, 429, 500, 502, 503, 504, 418, 302):
            with self.subTest(status=status):
                self.assertIs(self.error_for(status, b"<html>proxy</html>").did_nothing, False)

    def test_client_side_refusals_and_connections(self) -> None:
        with self.assertRaises(quiver.InvalidIdempotencyKeyError) as ctx:
            self.client.tools.call(1, action="a", idempotency_key=" op")
        self.assertIs(ctx.exception.did_nothing, True)
        with self.assertRaises(quiver.InvalidRequestError) as ctx2:
            self.client.tools.call(1, action="a", arguments={"x": float("nan")})
        self.assertIs(ctx2.exception.did_nothing, True)
        # A refused connection sent nothing; a cut one may have been acted on.
        refused = AgentClient(api_key="x", base_url=f"http://127.0.0.1:{support.free_port()}", max_retries=0)
        with self.assertRaises(quiver.APIConnectionError) as ctx3:
            refused.tools.call(1, action="a", idempotency_key="op")
        self.assertIs(ctx3.exception.did_nothing, True)
        self.fake.push(200, "DROP")
        with self.assertRaises(quiver.APIConnectionError) as ctx4:
            self.make_client(max_retries=0).tools.call(1, action="a", idempotency_key="op")
        self.assertIs(ctx4.exception.did_nothing, False)
        self.fake.push(200, b"<html>not json</html>")
        with self.assertRaises(quiver.QuiverError) as ctx5:
            self.client.tools.get(1)
        self.assertIs(ctx5.exception.did_nothing, False)

    def test_an_earlier_attempt_that_may_have_run_counts(self) -> None:
        # The first attempt's answer was lost (it may have run); the retry's 503 says only that the retry did
        # nothing: the error raised must not say the operation did nothing.
        for first in ("DROP", {"error": "internal", "message": "bug"}):
            with self.subTest(first=first):
                self.fake.push(500 if first != "DROP" else 200, first)
                self.fake.push(503, {"error": "unavailable", "message": "db down"})
                self.fake.push(503, {"error": "unavailable", "message": "db down"})
                with self.assertRaises(quiver.ServiceUnavailableError) as ctx:
                    self.client.tools.call(1, action="a", idempotency_key="op")
                self.assertIs(ctx.exception.did_nothing, False)
        # Only attempts that did nothing before it: the last error's word holds.
        self.fake.push(429, {"error": "rate_limited", "message": "slow"}, {"Retry-After": "0"})
        self.fake.push(503, {"error": "unavailable", "message": "db down"})
        self.fake.push(422, {"error": "invalid_arguments", "message": "bad", "fields": {"q": "required"}})
        with self.assertRaises(quiver.InvalidArgumentsError) as ctx2:
            self.client.tools.call(1, action="a")
        self.assertIs(ctx2.exception.did_nothing, True)

    def test_a_retry_after_a_refused_connection(self) -> None:
        port = support.free_port()
        client = AgentClient(api_key="x", base_url=f"http://127.0.0.1:{port}", max_retries=1)

        def start_server(delay: float) -> None:  # between the refused attempt and the retry
            server = ScriptedServer(port)
            self.addCleanup(server.close)
            server.push(503, {"error": "unavailable", "message": "db down"})

        client._transport.sleep = start_server
        with self.assertRaises(quiver.ServiceUnavailableError) as ctx:
            client.tools.call(1, action="a", idempotency_key="op")
        self.assertIs(ctx.exception.did_nothing, True)

    def test_a_body_field_of_that_name_does_not_override_it(self) -> None:
        err = self.error_for(500, {"error": "internal", "message": "m", "did_nothing": True})
        self.assertIs(err.did_nothing, False)
        self.assertEqual(err.body["did_nothing"], True)


class TestUnsafeRequestsRetryWhatDidNothing(Base):
    def test_a_refused_connection_is_retried_even_without_a_key(self) -> None:
        # Nothing was sent, so repeating a create (or a call without a key) cannot do it twice.
        port = support.free_port()
        client = AgentClient(api_key="x", base_url=f"http://127.0.0.1:{port}", max_retries=1)
        servers = []

        def start_server(delay: float) -> None:  # between the refused attempt and the retry
            server = ScriptedServer(port)
            self.addCleanup(server.close)
            server.push(201, {"id": 7, "name": "a", "goal": "g", "status": "draft", "tools": []})
            servers.append(server)

        client._transport.sleep = start_server
        self.assertEqual(client.agents.create(name="a", goal="g").id, 7)
        self.assertEqual([r["method"] for r in servers[0].requests], ["POST"])

    def test_a_cut_connection_is_still_not_retried_without_a_key(self) -> None:
        self.fake.push(200, "DROP")
        with self.assertRaises(quiver.APIConnectionError) as ctx:
            self.client.agents.create(name="a", goal="g")
        self.assertIs(ctx.exception.did_nothing, False)
        self.assertEqual(len(self.fake.requests), 1)
        self.assertEqual(self.delays, [])


if __name__ == "__main__":
    unittest.main()
