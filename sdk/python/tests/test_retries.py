"""SDK behaviour against a scripted fake server: retries, timeouts and errors raised before any request.

These need no Go toolchain. The rest of the fake-server suite is in test_unit.py.
"""

from __future__ import annotations

import time
import unittest

import support  # noqa: F401  (sets sys.path and NO_PROXY)
from support import ScriptedServer
from unit_base import FakeServerTest

import quiver
from quiver import AgentClient


Base = FakeServerTest


class TestRetries(Base):
    OK = {"call_id": "c_ok", "tool": 1, "action": "a", "is_error": False, "result": {}}

    def test_call_without_key_not_retried_on_500_or_drop(self) -> None:
        self.fake.push(500, {"error": "internal", "message": "bug", "request_id": "r"})
        with self.assertRaises(quiver.InternalServerError):
            self.client.tools.call(1, action="a")
        self.fake.push(200, "DROP")
        with self.assertRaises(quiver.APIConnectionError):
            self.client.tools.call(1, action="a")
        self.fake.push(502, {"error": "tool_unreachable", "message": "down"})
        with self.assertRaises(quiver.ToolUnreachableError):
            self.client.tools.call(1, action="a")
        self.assertEqual(len(self.fake.requests), 3)
        self.assertEqual(self.delays, [])

    def test_call_without_key_retried_on_429_and_503(self) -> None:
        self.fake.push(429, {"error": "rate_limited", "message": "slow"}, {"Retry-After": "2"})
        self.fake.push(503, {"error": "unavailable", "message": "db down"})
        self.fake.push(200, self.OK)
        result = self.client.tools.call(1, action="a")
        self.assertEqual(result.call_id, "c_ok")
        self.assertEqual(len(self.fake.requests), 3)
        self.assertEqual(self.delays[0], 2.0)  # Retry-After honoured
        self.assertEqual(len(self.delays), 2)

    def test_call_with_key_retried_with_same_key_and_body(self) -> None:
        self.fake.push(200, "DROP")
        self.fake.push(409, {"error": "request_in_progress", "message": "wait"}, {"Retry-After": "1"})
        self.fake.push(200, self.OK, {"Idempotent-Replayed": "true"})
        result = self.client.tools.call(1, action="a", arguments={"n": 12345678901234567890}, idempotency_key="op-1")
        self.assertTrue(result.replayed)
        self.assertEqual(len(self.fake.requests), 3)
        self.assertEqual({r["headers"]["Idempotency-Key"] for r in self.fake.requests}, {"op-1"})
        self.assertEqual(len({r["body"] for r in self.fake.requests}), 1)
        self.assertIn(b"12345678901234567890", self.fake.requests[0]["body"])
        self.assertEqual(self.delays[1], 1.0)

    def test_call_with_key_gives_up_after_max_retries(self) -> None:
        for _ in range(3):
            self.fake.push(500, {"error": "internal", "message": "bug"})
        with self.assertRaises(quiver.InternalServerError):
            self.client.tools.call(1, action="a", idempotency_key="op-2")
        self.assertEqual(len(self.fake.requests), 3)  # 1 + max_retries (2)
        self.assertEqual(len(self.delays), 2)
        self.assertLess(self.delays[0], self.delays[1])  # exponential backoff

    def test_outcome_unknown_is_terminal(self) -> None:
        self.fake.push(504, {"error": "tool_outcome_unknown", "message": "lost"})
        with self.assertRaises(quiver.ToolOutcomeUnknownError):
            self.client.tools.call(1, action="a", idempotency_key="op-3")
        self.fake.push(409, {"error": "tool_outcome_unknown", "message": "lost"})
        with self.assertRaises(quiver.ToolOutcomeUnknownError):
            self.client.tools.call(1, action="a", idempotency_key="op-3")
        self.assertEqual(len(self.fake.requests), 2)

    def test_deterministic_upstream_refusals_not_retried(self) -> None:
        # The same request would get the same answer: not retried even when safe to repeat (a retry
        # would meet the fake's default 200 and succeed).
        for code, cls in [("upstream_auth_failed", quiver.UpstreamAuthFailedError),
                          ("upstream_refused", quiver.UpstreamRefusedError)]:
            for name, send in [("call with key", lambda: self.client.tools.call(1, action="a", idempotency_key="op-r")),
                               ("get", lambda: self.client.tools.get(1))]:
                with self.subTest(code=code, request=name):
                    before = len(self.fake.requests)
                    self.fake.push(502, {"error": code, "message": "refused"})
                    with self.assertRaises(cls):
                        send()
                    self.assertEqual(len(self.fake.requests), before + 1)
                    self.assertEqual(self.delays, [])

    def test_max_retries_configurable(self) -> None:
        client = self.make_client(max_retries=0)
        self.fake.push(503, {"error": "unavailable", "message": "x"})
        with self.assertRaises(quiver.ServiceUnavailableError):
            client.tools.list()
        self.assertEqual(len(self.fake.requests), 1)
        client = self.make_client(max_retries=4)
        for _ in range(4):
            self.fake.push(502, {"error": "tool_unreachable", "message": "x"})
        self.fake.push(200, {"id": 1})
        self.assertEqual(client.tools.get(1).id, 1)
        self.assertEqual(len(self.fake.requests), 6)

    def test_backoff_stays_capped_however_many_retries(self) -> None:
        # max_retries as "retry for ever" on reads: past some 1,000 attempts 2 ** attempt is more than a
        # float can hold, and the backoff must still be max_retry_delay, not an OverflowError.
        client = AgentClient(api_key="x", base_url=f"http://127.0.0.1:{support.free_port()}", max_retries=1100)
        delays = []
        client._transport.sleep = delays.append
        with self.assertRaises(quiver.APIConnectionError):
            client.tools.get(1)  # nothing listens: every attempt is refused
        self.assertEqual(len(delays), 1100)
        self.assertLessEqual(max(delays), client._transport.max_retry_delay)

    def test_get_and_delete_retried(self) -> None:
        self.fake.push(200, "DROP")
        self.fake.push(500, {"error": "internal", "message": "x"})
        self.fake.push(200, {"id": 9, "name": "a"})
        self.assertEqual(self.client.agents.get(9).id, 9)
        self.fake.push(200, "DROP")
        self.fake.push(204)
        self.client.agents.delete(9)
        self.assertEqual(len(self.fake.requests), 5)

    NOT_FOUND = {"error": "not_found", "message": "Agent 9 does not exist."}

    def test_delete_whose_answer_was_lost_is_done(self) -> None:
        # The first DELETE ran but its answer was lost: the retry's 404 means it is gone.
        self.fake.push(200, "DROP")
        self.fake.push(404, self.NOT_FOUND)
        self.assertIsNone(self.client.agents.delete(9))
        self.fake.push(502, b"<html>Bad Gateway</html>")  # a proxy's: the DELETE may have run behind it
        self.fake.push(404, self.NOT_FOUND)
        self.assertIsNone(self.client.tools.delete(9))
        self.assertEqual([r["method"] for r in self.fake.requests], ["DELETE"] * 4)

    def test_delete_after_quivers_own_500_is_done(self) -> None:
        # Quiver's 500 on a write whose database connection failed mid-commit says the change "may or may
        # not have been applied" (and any 500 is a bug that may come after the delete): the retry's 404
        # means that attempt deleted it.
        self.fake.push(500, {"error": "internal", "request_id": "r1", "message": "The database connection "
                             "failed while this change was being saved, so it may or may not have been applied."})
        self.fake.push(404, self.NOT_FOUND)
        self.assertIsNone(self.client.tools.delete(9))
        self.fake.push(500, {"error": "internal", "message": "bug", "request_id": "r2"})
        self.fake.push(404, self.NOT_FOUND)
        self.assertIsNone(self.client.agents.delete(9))
        self.assertEqual([r["method"] for r in self.fake.requests], ["DELETE"] * 4)

    def test_delete_404_is_an_error_unless_an_attempt_may_have_run(self) -> None:
        self.fake.push(404, self.NOT_FOUND)  # the first attempt
        with self.assertRaises(quiver.NotFoundError):
            self.client.agents.delete(9)
        self.fake.push(503, {"error": "unavailable", "message": "db down"})  # Quiver's word: nothing done
        self.fake.push(404, self.NOT_FOUND)
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.delete(9)
        self.fake.push(200, "DROP")
        self.fake.push(404, {"message": "no such page"})  # a 404 without Quiver's code
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.delete(9)
        self.fake.push(200, "DROP")  # only a DELETE: a GET's 404 stays an error
        self.fake.push(404, self.NOT_FOUND)
        with self.assertRaises(quiver.NotFoundError):
            self.client.agents.get(9)
        self.assertEqual(len(self.fake.requests), 7)

    def test_delete_after_a_refused_connection_is_still_not_found(self) -> None:
        port = support.free_port()
        client = AgentClient(api_key="x", base_url=f"http://127.0.0.1:{port}", max_retries=1)
        servers = []

        def start_server(delay: float) -> None:  # between the refused attempt and the retry
            server = ScriptedServer(port)
            self.addCleanup(server.close)
            server.push(404, self.NOT_FOUND)
            servers.append(server)

        client._transport.sleep = start_server
        with self.assertRaises(quiver.NotFoundError):
            client.agents.delete(9)  # nothing was sent the first time: the 404 is the truth
        self.assertEqual(len(servers[0].requests), 1)

    def test_creates_not_retried_on_drop_or_500(self) -> None:
        self.fake.push(200, "DROP")
        with self.assertRaises(quiver.APIConnectionError):
            self.client.tools.create(mcp_tool="tavily")
        self.fake.push(500, {"error": "internal", "message": "x"})
        with self.assertRaises(quiver.InternalServerError):
            self.client.agents.create(name="a", goal="b")
        self.fake.push(200, "DROP")
        with self.assertRaises(quiver.APIConnectionError):
            self.client.tools.provide_config(1, user_response={"a": "b"})
        self.fake.push(200, "DROP")
        with self.assertRaises(quiver.APIConnectionError):
            self.client.agents.update(1, name="x")
        self.assertEqual(len(self.fake.requests), 4)

    def test_codeless_answers_not_retried_for_unsafe_requests(self) -> None:
        # A proxy's answer without Quiver's code does not prove the request did nothing.
        unsafe = [
            ("agents.create", lambda: self.client.agents.create(name="a", goal="g")),
            ("tools.create", lambda: self.client.tools.create(mcp_tool="tavily")),
            ("tools.call without key", lambda: self.client.tools.call(1, action="a")),
            ("agents.update", lambda: self.client.agents.update(1, name="x")),
            ("provide_config", lambda: self.client.tools.provide_config(1, user_response={"a": "b"})),
        ]
        answers = [(503, b"upstream connect error or disconnect/reset before headers. reset reason: overflow"),
                   (502, b"<html>502 Bad Gateway</html>"), (504, b"<html>504 Gateway Time-out</html>"),
                   (500, b"oops"), (429, b"<html>429 Too Many Requests</html>")]
        for name, send in unsafe:
            for status, body in answers:
                with self.subTest(request=name, status=status):
                    self.delays.clear()
                    before = len(self.fake.requests)
                    self.fake.push(status, body)
                    self.fake.push(201, {"id": 1})
                    with self.assertRaises(quiver.APIStatusError) as ctx:
                        send()
                    self.assertEqual(ctx.exception.status, status)
                    self.assertEqual(len(self.fake.requests), before + 1)
                    self.assertEqual(self.delays, [])
                    self.fake.script.clear()

    def test_codeless_answers_retried_for_safe_requests(self) -> None:
        self.fake.push(503, b"upstream connect error or disconnect/reset before headers")
        self.fake.push(502, b"<html>502 Bad Gateway</html>")
        self.fake.push(200, {"id": 1})
        self.assertEqual(self.client.tools.get(1).id, 1)
        self.fake.push(504, b"<html>504 Gateway Time-out</html>")
        self.fake.push(200, self.OK)
        self.assertEqual(self.client.tools.call(1, action="a", idempotency_key="op-5").call_id, "c_ok")
        self.assertEqual(len(self.fake.requests), 5)
        self.assertEqual(len(self.delays), 3)

    def test_retry_after_over_60s_gives_up_immediately(self) -> None:
        for status, code in [(429, "rate_limited"), (503, "unavailable"), (409, "request_in_progress")]:
            with self.subTest(code=code):
                before = len(self.fake.requests)
                self.fake.push(status, {"error": code, "message": "later"}, {"Retry-After": "61"})
                with self.assertRaises(quiver.APIStatusError) as ctx:
                    self.client.tools.call(1, action="a", idempotency_key="op-6")
                self.assertEqual(ctx.exception.code, code)
                self.assertEqual(ctx.exception.retry_after, 61.0)
                self.assertEqual(len(self.fake.requests), before + 1)
                self.assertEqual(self.delays, [])
        self.fake.push(429, {"error": "rate_limited", "message": "soon"}, {"Retry-After": "60"})
        self.fake.push(200, self.OK)
        self.client.tools.call(1, action="a")
        self.assertEqual(self.delays, [60.0])

    def test_creates_retried_on_429(self) -> None:
        self.fake.push(429, {"error": "rate_limited", "message": "x"}, {"Retry-After": "0"})
        self.fake.push(201, {"id": 1, "mcp_tool": "browser", "is_configured": True, "next_configuration_step": None})
        self.assertEqual(self.client.tools.create(mcp_tool="browser").id, 1)
        self.assertEqual(self.delays, [0.0])

    def test_timeout_is_connection_error(self) -> None:
        # A listening socket that never answers.
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(5)
        self.addCleanup(sock.close)
        client = AgentClient(api_key="x", base_url=f"http://127.0.0.1:{sock.getsockname()[1]}",
                             timeout=0.3, max_retries=0)
        with self.assertRaises(quiver.APITimeoutError) as ctx:
            client.tools.call(1, action="a", idempotency_key="k")
        self.assertIsInstance(ctx.exception, quiver.APIConnectionError)


class TestTimeoutIsADeadline(unittest.TestCase):
    """``timeout`` bounds the whole attempt (connect, send, status, headers, body), not each socket read."""

    BODY = b"{\"id\": 1, \"name\": \"trickled\", \"n\":1}"  # 36 bytes

    def response(self, status: str = "200 OK") -> bytes:
        return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(self.BODY)}\r\n"
                "Connection: close\r\n\r\n").encode() + self.BODY

    def check(self, server: "support.TrickleServer", timeout: float = 1.0) -> None:
        self.addCleanup(server.close)
        client = AgentClient(api_key="x", base_url=server.url, timeout=timeout, max_retries=0)
        started = time.monotonic()
        with self.assertRaises(quiver.APITimeoutError) as ctx:
            client.tools.get(1)
        elapsed = time.monotonic() - started
        self.assertIsInstance(ctx.exception, quiver.APIConnectionError)
        self.assertLess(elapsed, timeout + 0.6)
        self.assertGreaterEqual(elapsed, timeout - 0.05)

    def test_trickled_body(self) -> None:
        raw = self.response()
        self.check(support.TrickleServer(raw, head=len(raw) - len(self.BODY), interval=0.3))

    def test_trickled_status_line_and_headers(self) -> None:
        self.check(support.TrickleServer(self.response(), head=0, interval=0.1))

    def test_trickled_error_body(self) -> None:
        raw = self.response("500 Internal Server Error")
        self.check(support.TrickleServer(raw, head=len(raw) - len(self.BODY), interval=0.3))

    def test_fast_enough_answer_is_read_whole(self) -> None:
        raw = self.response()
        server = support.TrickleServer(raw, head=len(raw) - len(self.BODY), chunk=12, interval=0.05)
        self.addCleanup(server.close)
        client = AgentClient(api_key="x", base_url=server.url, timeout=2.0, max_retries=0)
        self.assertEqual(client.tools.get(1).name, "trickled")


class TestLocalErrors(Base):
    """What cannot be sent as given is refused before any request, and never retried."""

    def test_api_key_that_cannot_be_a_header(self) -> None:
        for bad in ["k-test\u20ac", "k-\u00e9\u4e2d", "k\r\nX-Evil: 1", "k\x00"]:
            with self.subTest(key=bad):
                client = AgentClient(api_key=bad, base_url=self.fake.url)
                client._transport.sleep = self.delays.append
                self.assert_refused(client.tools.list, "X-API-KEY")
                with self.assertRaises(quiver.InvalidRequestError) as ctx:
                    client.tools.call(1, action="a", idempotency_key="k")
                self.assertNotIn(bad, str(ctx.exception))  # the key is a secret: never in the message

    def test_default_header_that_cannot_be_a_header(self) -> None:
        client = AgentClient(api_key="k", base_url=self.fake.url, default_headers={"X-Trace": "caf\u00e9 \u2615"})
        client._transport.sleep = self.delays.append
        self.assert_refused(client.agents.list, "X-Trace", "U+2615")

    def test_latin1_header_value_is_sent(self) -> None:
        client = AgentClient(api_key="k", base_url=self.fake.url, default_headers={"X-Note": "caf\u00e9"})
        self.fake.push(200, {"agents": []})
        client.agents.list()
        self.assertEqual(len(self.fake.requests), 1)

    def test_lone_surrogate_in_arguments(self) -> None:
        self.assert_refused(lambda: self.client.tools.call(1, action="a", arguments={"q": "x\ud800y"},
                                                           idempotency_key="k"), "U+D800")
        self.assert_refused(lambda: self.client.agents.create(name="\udfff"), "U+DFFF")

    def test_lone_surrogate_in_a_path_segment(self) -> None:
        # urllib.parse.quote would raise UnicodeEncodeError, which is no QuiverError.
        self.assert_refused(lambda: self.client.tools.get_available("a\ud800"), "lone surrogate")
        self.assert_refused(lambda: self.client.tools.get("a\udc00"), "lone surrogate")
        self.assertEqual(self.fake.requests, [])

    def test_lone_surrogate_in_a_query_value(self) -> None:
        # urllib.parse.urlencode would raise UnicodeEncodeError, which is no QuiverError.
        self.assert_refused(lambda: self.client.tools.list_page(cursor="c\ud800"), "lone surrogate")
        self.assert_refused(lambda: self.client.agents.list_page(cursor="\udc00c"), "lone surrogate")
        self.assert_refused(lambda: self.client.tools.calls_page(cursor="c\udfff"), "lone surrogate")
        self.assertEqual(self.fake.requests, [])

    def test_non_ascii_body_is_utf8(self) -> None:
        self.fake.push(200, {"call_id": "c"})
        self.client.tools.call(1, action="a", arguments={"q": "caf\u00e9 \u4e2d \U0001F600"}, idempotency_key="k")
        raw = self.fake.requests[0]["body"]
        self.assertIn("caf\u00e9 \u4e2d \U0001F600".encode("utf-8"), raw)


if __name__ == "__main__":
    unittest.main()
