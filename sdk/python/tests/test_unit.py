"""SDK behaviour against a scripted fake server: error mapping, retries, key validation, encoding.

These need no Go toolchain. Everything about the real server is in test_integration.py.
"""

from __future__ import annotations

import json
import os
import time
import unittest
from unittest import mock

import support  # noqa: F401  (sets sys.path and NO_PROXY)
from support import ScriptedServer
from unit_base import FakeServerTest

import quiver
from quiver import AgentClient


Base = FakeServerTest


class TestPublicNames(unittest.TestCase):
    def test_every_public_name_is_importable(self) -> None:
        self.assertEqual(len(quiver.__all__), len(set(quiver.__all__)))
        for name in quiver.__all__:
            with self.subTest(name=name):
                self.assertTrue(hasattr(quiver, name))
        for name in ("AgentClient", "ToolsResource", "NOT_GIVEN", "validate_idempotency_key", "__version__",
                     "Tool", "Page", "QuiverError", "ValidationError", "ServiceUnavailableError"):
            self.assertIn(name, quiver.__all__)


class TestClientConfig(Base):
    def test_env_fallback(self) -> None:
        with mock.patch.dict(os.environ, {"QUIVER_API_KEY": "from-env", "QUIVER_BASE_URL": self.fake.url}):
            client = AgentClient()
        self.assertEqual(client.base_url, self.fake.url)
        self.fake.push(200, {"tools": [], "next_cursor": None})
        client.tools.list()
        self.assertEqual(self.fake.requests[0]["headers"]["X-API-KEY"], "from-env")

    def test_default_base_url(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=True):
            client = AgentClient(api_key="x")
        self.assertEqual(client.base_url, "http://localhost:8080")

    def test_headers_and_paths(self) -> None:
        self.fake.push(201, {"id": 7, "mcp_tool": "tavily", "is_configured": False,
                             "next_configuration_step": {"step": "api_key", "fields": []}})
        tool = self.client.tools.create(mcp_tool="tavily")
        req = self.fake.requests[0]
        self.assertEqual(req["method"], "POST")
        self.assertEqual(req["path"], "/api/v1/agents/custom-tools/")
        self.assertEqual(req["headers"]["X-API-KEY"], "k-test")
        self.assertTrue(req["headers"]["Content-Type"].startswith("application/json"))
        self.assertTrue(req["headers"]["User-Agent"].startswith("quiver-python/"))
        self.assertEqual(self.body(), {"mcp_tool": "tavily"})
        self.assertIsInstance(tool, quiver.Tool)
        self.assertEqual(tool.id, 7)
        self.assertEqual(tool["id"], 7)
        self.assertEqual(tool.next_configuration_step.step, "api_key")
        self.assertIn("Tool(id=7", repr(tool))
        self.assertIn("mcp_tool='tavily'", str(tool))
        self.assertEqual(json.loads(json.dumps(tool))["id"], 7)


class TestEncoding(Base):
    def test_update_sends_only_given_fields(self) -> None:
        self.fake.push(200, {"id": 3, "name": "a", "tools": [1, 2]})
        agent = self.client.agents.update(agent_id=3, tools=[1, {"id": 2}])
        self.assertEqual(self.fake.requests[0]["method"], "PATCH")
        self.assertEqual(self.fake.requests[0]["path"], "/api/v1/agents/3/")
        self.assertEqual(self.body(), {"tools": [1, 2]})
        self.assertEqual(agent.tools, [1, 2])

    def test_call_body_and_tool_object(self) -> None:
        self.fake.push(200, {"call_id": "c_1", "tool": 5, "action": "search", "is_error": False,
                             "result": {"items": [1]}, "duration_ms": 3})
        tool = quiver.Tool._from_json({"id": 5})
        result = self.client.tools.call(tool, action="search", arguments={"query": "q"})
        self.assertEqual(self.body(), {"tool": 5, "action": "search", "arguments": {"query": "q"}})
        self.assertNotIn("Idempotency-Key", self.fake.requests[0]["headers"])
        self.assertEqual(result.call_id, "c_1")
        self.assertEqual(result.result, {"items": [1]})  # the tool's output stays plain JSON
        self.assertIs(type(result.result), dict)
        self.assertFalse(result.replayed)

    def test_call_by_catalog_name_and_replayed(self) -> None:
        self.fake.push(200, {"call_id": "c_2", "tool": 5, "action": "search", "is_error": False, "result": None},
                       {"Idempotent-Replayed": "true"})
        result = self.client.tools.call("tavily", action="search", arguments={}, idempotency_key="k 1")
        self.assertEqual(self.body()["tool"], "tavily")
        self.assertEqual(self.fake.requests[0]["headers"]["Idempotency-Key"], "k 1")
        self.assertTrue(result.replayed)

    def test_delete_returns_none(self) -> None:
        self.fake.push(204)
        self.assertIsNone(self.client.tools.delete(4))
        self.assertEqual(self.fake.requests[0]["method"], "DELETE")
        self.assertEqual(self.fake.requests[0]["path"], "/api/v1/agents/custom-tools/4/")

    def test_pagination_follows_cursor(self) -> None:
        self.fake.push(200, {"tools": [{"id": 1}, {"id": 2}], "next_cursor": "c2"})
        self.fake.push(200, {"tools": [{"id": 3}], "next_cursor": "c3"})
        self.fake.push(200, {"tools": [{"id": 4}], "next_cursor": None})
        tools = self.client.tools.list(limit=2)
        self.assertEqual([t.id for t in tools], [1, 2, 3, 4])
        paths = [r["path"] for r in self.fake.requests]
        self.assertEqual(paths[0], "/api/v1/agents/custom-tools/?limit=2")
        self.assertIn("cursor=c2", paths[1])
        self.assertIn("cursor=c3", paths[2])

    def test_available_category(self) -> None:
        self.fake.push(200, {"tools": [{"name": "tavily", "type": "builtin", "categories": ["search"]}]})
        catalog = self.client.tools.available(category="search")
        self.assertEqual(self.fake.requests[0]["path"], "/api/v1/agents/tools/available/?category=search")
        self.assertEqual(catalog[0].name, "tavily")
        self.assertIsInstance(catalog[0], quiver.AvailableTool)

    def test_idempotency_key_path_is_escaped(self) -> None:
        self.fake.push(200, {"key": "a/b c", "state": "succeeded"})
        state = self.client.idempotency_keys.get("a/b c")
        self.assertEqual(self.fake.requests[0]["path"], "/api/v1/idempotency-keys/a%2Fb%20c")
        self.assertEqual(state.state, "succeeded")

    def test_dot_idempotency_keys_keep_their_path_segment(self) -> None:
        # "." and ".." are valid keys; urllib sends the path as given (the server accepts it).
        for k in (".", ".."):
            with self.subTest(key=k):
                self.fake.push(200, {"key": k, "state": "succeeded"})
                self.assertEqual(self.client.idempotency_keys.get(k).key, k)
                self.assertEqual(self.fake.requests[-1]["path"], "/api/v1/idempotency-keys/" + k)


class TestErrors(Base):
    CASES = [
        (400, "invalid_json", quiver.BadRequestError),
        (400, "invalid_idempotency_key", quiver.InvalidIdempotencyKeyError),
        (400, "idempotency_key_required", quiver.IdempotencyKeyRequiredError),
        (401, "unauthorized", quiver.AuthenticationError),
        (403, "forbidden", quiver.PermissionDeniedError),
        (404, "not_found", quiver.NotFoundError),
        (409, "idempotency_key_reused", quiver.IdempotencyKeyReusedError),
        (409, "request_in_progress", quiver.RequestInProgressError),
        (409, "tool_outcome_unknown", quiver.ToolOutcomeUnknownError),
        (504, "tool_outcome_unknown", quiver.ToolOutcomeUnknownError),
        (409, "tool_not_configured", quiver.ToolNotConfiguredError),
        (413, "payload_too_large", quiver.PayloadTooLargeError),
        (422, "validation_error", quiver.ValidationError),
        (422, "invalid_arguments", quiver.ValidationError),
        (429, "rate_limited", quiver.RateLimitError),
        (500, "internal", quiver.InternalServerError),
        (502, "tool_unreachable", quiver.ToolUnreachableError),
        (502, "upstream_auth_failed", quiver.UpstreamAuthFailedError),
        (502, "upstream_refused", quiver.UpstreamRefusedError),
        (503, "unavailable", quiver.ServiceUnavailableError),
    ]

    def test_mapping_by_code(self) -> None:
        client = self.make_client(max_retries=0)
        for status, code, cls in self.CASES:
            with self.subTest(code=code, status=status):
                self.fake.push(status, {"error": code, "message": f"m {code}", "extra": 1},
                               {"X-Request-Id": "rid-1", "Retry-After": "3"})
                with self.assertRaises(cls) as ctx:
                    client.tools.call(1, action="a", idempotency_key="k")
                err = ctx.exception
                self.assertIsInstance(err, quiver.QuiverError)
                self.assertIsInstance(err, quiver.APIStatusError)
                self.assertEqual(err.status, status)
                self.assertEqual(err.status_code, status)
                self.assertEqual(err.code, code)
                self.assertEqual(err.message, f"m {code}")
                self.assertEqual(err.request_id, "rid-1")
                self.assertEqual(err.retry_after, 3.0)
                self.assertEqual(err.extra, 1)
                self.assertEqual(err.body["error"], code)
                self.assertIn(code, str(err))

    def test_mapping_by_status_when_code_unknown(self) -> None:
        # 4xx map by status; every 5xx without a Quiver code is the generic InternalServerError.
        client = self.make_client(max_retries=0)
        for status, cls in [(400, quiver.BadRequestError), (401, quiver.AuthenticationError),
                            (403, quiver.PermissionDeniedError), (404, quiver.NotFoundError),
                            (409, quiver.ConflictError), (422, quiver.ValidationError),
                            (429, quiver.RateLimitError), (500, quiver.InternalServerError),
                            (502, quiver.InternalServerError), (503, quiver.InternalServerError),
                            (504, quiver.InternalServerError), (418, quiver.APIStatusError)]:
            with self.subTest(status=status):
                self.fake.push(status, b"<html>oops</html>")
                with self.assertRaises(cls) as ctx:
                    client.tools.get(1)
                self.assertIs(type(ctx.exception), cls)
                self.assertEqual(ctx.exception.status, status)
                self.assertIsNone(ctx.exception.code)
                self.assertIn("oops", ctx.exception.message)

    def test_codeless_5xx_is_not_a_quiver_claim(self) -> None:
        # A proxy's 502/503/504 says nothing of the tool or of what the server did.
        client = self.make_client(max_retries=0)
        specific = (quiver.ToolUnreachableError, quiver.UpstreamAuthFailedError, quiver.UpstreamRefusedError,
                    quiver.ServiceUnavailableError, quiver.ToolOutcomeUnknownError)
        for status, body in [(502, b"<html>502 Bad Gateway</html>"),
                             (503, b"upstream connect error or disconnect/reset before headers"),
                             (504, b"<html>504 Gateway Time-out</html>"),
                             (502, {"error": "bad_gateway", "message": "not a Quiver code"})]:
            with self.subTest(status=status, body=body):
                self.fake.push(status, body)
                with self.assertRaises(quiver.InternalServerError) as ctx:
                    client.tools.call(1, action="a", idempotency_key="k")
                self.assertNotIsInstance(ctx.exception, specific)
                self.assertEqual(ctx.exception.status, status)

    def test_extra_fields(self) -> None:
        self.fake.push(422, {"error": "validation_error", "message": "bad", "fields": {"tools": "unknown: 9"}})
        with self.assertRaises(quiver.ValidationError) as ctx:
            self.client.agents.create(name="a", goal="g", tools=[9])
        self.assertEqual(ctx.exception.fields, {"tools": "unknown: 9"})
        step = {"step": "api_key", "type": "form"}
        self.fake.push(409, {"error": "tool_not_configured", "message": "configure", "next_configuration_step": step})
        with self.assertRaises(quiver.ToolNotConfiguredError) as ctx2:
            self.client.tools.call(1, action="search")
        self.assertEqual(ctx2.exception.next_configuration_step, step)

    def test_not_configured_step_is_a_configuration_step_like_a_tools(self) -> None:
        step = {"step": "oauth", "type": "oauth", "authorization_url": "https://auth.example/x",
                "fields": [{"name": "scope"}]}
        self.fake.push(409, {"error": "tool_not_configured", "message": "configure", "next_configuration_step": step})
        with self.assertRaises(quiver.ToolNotConfiguredError) as ctx:
            self.client.tools.call(1, action="search")
        self.fake.push(200, {"id": 1, "is_configured": False, "next_configuration_step": step})
        tool = self.client.tools.get(1)
        from_error = ctx.exception.next_configuration_step
        self.assertIs(type(from_error), type(tool.next_configuration_step))
        self.assertIsInstance(from_error, quiver.ConfigurationStep)
        self.assertEqual(from_error.step, "oauth")
        self.assertEqual(from_error.authorization_url, "https://auth.example/x")
        self.assertEqual(from_error.fields[0].name, "scope")
        self.fake.push(409, {"error": "tool_not_configured", "message": "configure"})
        with self.assertRaises(quiver.ToolNotConfiguredError) as ctx:
            self.client.tools.call(1, action="search")
        self.assertIsNone(ctx.exception.next_configuration_step)

    def test_retry_after_http_date(self) -> None:
        self.fake.push(429, {"error": "rate_limited", "message": "slow"}, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
        client = self.make_client(max_retries=0)
        with self.assertRaises(quiver.RateLimitError) as ctx:
            client.tools.list()
        self.assertEqual(ctx.exception.retry_after, 0.0)

    def test_connection_refused(self) -> None:
        port = support.free_port()
        client = AgentClient(api_key="x", base_url=f"http://127.0.0.1:{port}", max_retries=1)
        delays = []
        client._transport.sleep = delays.append
        with self.assertRaises(quiver.APIConnectionError) as ctx:
            client.tools.list()
        self.assertIsNone(ctx.exception.status)
        self.assertEqual(len(delays), 1)  # a GET is retried


class TestIdempotencyKeyValidation(Base):
    def test_invalid_keys_never_sent(self) -> None:
        for bad in ["", " lead", "trail ", "x" * 256, "caf\u00e9", "tab\there", "nl\n", "\x7f"]:
            with self.subTest(key=bad):
                with self.assertRaises(quiver.InvalidIdempotencyKeyError) as ctx:
                    self.client.tools.call(1, action="post", arguments={}, idempotency_key=bad)
                self.assertIsInstance(ctx.exception, ValueError)
                self.assertIsInstance(ctx.exception, quiver.QuiverError)
        for bad_type in [123, b"bytes", 1.5]:
            with self.subTest(key=bad_type):
                with self.assertRaises(TypeError):
                    self.client.tools.call(1, action="post", idempotency_key=bad_type)  # type: ignore[arg-type]
        self.assertEqual(self.fake.requests, [])

    def test_valid_keys_sent_unchanged(self) -> None:
        for good in ["a", "x" * 255, "inner space ok", "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"]:
            with self.subTest(key=good):
                self.fake.push(200, {"call_id": "c", "tool": 1, "action": "post", "is_error": False, "result": {}})
                self.client.tools.call(1, action="post", idempotency_key=good)
                self.assertEqual(self.fake.requests[-1]["headers"]["Idempotency-Key"], good)


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

    def test_non_ascii_body_is_utf8(self) -> None:
        self.fake.push(200, {"call_id": "c"})
        self.client.tools.call(1, action="a", arguments={"q": "caf\u00e9 \u4e2d \U0001F600"}, idempotency_key="k")
        raw = self.fake.requests[0]["body"]
        self.assertIn("caf\u00e9 \u4e2d \U0001F600".encode("utf-8"), raw)


if __name__ == "__main__":
    unittest.main()
