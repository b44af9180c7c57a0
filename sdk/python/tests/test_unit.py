"""SDK behaviour against a scripted fake server: client config, encoding, error mapping, key validation.

These need no Go toolchain. Retries and timeouts are in test_retries.py, the real server in
test_integration.py.
"""

from __future__ import annotations

import json
import os
import unittest
from unittest import mock

import support  # noqa: F401  (sets sys.path and NO_PROXY)
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


class TestSeedPackageName(unittest.TestCase):
    def test_flymyai_is_quiver(self) -> None:
        # The product documents import the SDK as `flymyai`; every public name is quiver's own object.
        import flymyai

        self.assertEqual(flymyai.__all__, quiver.__all__)
        for name in quiver.__all__:
            with self.subTest(name=name):
                self.assertIs(getattr(flymyai, name), getattr(quiver, name))


class TestNoRuns(unittest.TestCase):
    def test_runs_says_why_it_is_not_there(self) -> None:
        # The seed's complete example ends with client.runs.create(...): a user who copies it gets the
        # reason and where to go, not a bare "no attribute 'runs'".
        client = AgentClient(api_key="k", base_url="http://127.0.0.1:9")
        with self.assertRaises(AttributeError) as cm:
            client.runs.create(agent_id=1)
        self.assertIn("Quiver does not run agents", str(cm.exception))
        self.assertIn("/api/v1/agents/{id}/mcp", str(cm.exception))
        self.assertFalse(hasattr(client, "runs"))


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

    def test_tools_must_be_a_list(self) -> None:
        for tools in (5, "5", b"5", {"id": 5}):
            with self.subTest(tools=tools), self.assertRaisesRegex(TypeError, "tools must be a list of tool IDs"):
                self.client.agents.create(name="a", tools=tools)
            with self.subTest(tools=tools), self.assertRaisesRegex(TypeError, "tools must be a list of tool IDs"):
                self.client.agents.update(3, tools=tools)
        self.assertEqual(self.fake.requests, [])  # nothing was sent
        self.fake.push(201, {"id": 4, "name": "a", "tools": [1, 2]})
        self.client.agents.create(name="a", tools=(t for t in (1, {"id": 2})))  # any other iterable goes
        self.assertEqual(self.body(), {"name": "a", "tools": [1, 2]})

    def test_call_body_and_tool_object(self) -> None:
        self.fake.push(200, {"call_id": "c_1", "tool": 5, "action": "search", "is_error": False,
                             "result": {"items": [1]}, "structured_content": {"items": [1], "n": 1},
                             "duration_ms": 3})
        tool = quiver.Tool._from_json({"id": 5})
        result = self.client.tools.call(tool, action="search", arguments={"query": "q"})
        self.assertEqual(self.body(), {"tool": 5, "action": "search", "arguments": {"query": "q"}})
        self.assertNotIn("Idempotency-Key", self.fake.requests[0]["headers"])
        self.assertEqual(result.call_id, "c_1")
        self.assertEqual(result.result, {"items": [1]})  # the tool's output stays plain JSON
        self.assertIs(type(result.result), dict)
        self.assertIs(type(result.structured_content), dict)  # so is its structured content
        self.assertFalse(result.replayed)

    def test_call_by_catalog_name_and_replayed(self) -> None:
        self.fake.push(200, {"call_id": "c_2", "tool": 5, "action": "search", "is_error": False, "result": None},
                       {"Idempotent-Replayed": "true"})
        result = self.client.tools.call("tavily", action="search", arguments={}, idempotency_key="k 1")
        self.assertEqual(self.body()["tool"], "tavily")
        self.assertEqual(self.fake.requests[0]["headers"]["Idempotency-Key"], "k 1")
        self.assertTrue(result.replayed)

    def test_call_result_made_by_hand_is_not_replayed(self) -> None:
        # A CallResult made from a dict (a test double, a cached result) has no response: not replayed,
        # as `new CallResult(data).replayed` is false in the JS SDK; never an AttributeError.
        self.assertFalse(quiver.CallResult().replayed)
        self.assertFalse(quiver.CallResult({"call_id": "c_3", "is_error": False}).replayed)

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
        (400, "invalid_json", quiver.InvalidJSONError),
        (400, "invalid_idempotency_key", quiver.InvalidIdempotencyKeyError),
        (400, "idempotency_key_required", quiver.IdempotencyKeyRequiredError),
        (401, "unauthorized", quiver.AuthenticationError),
        (403, "forbidden", quiver.PermissionDeniedError),
        (404, "not_found", quiver.NotFoundError),
        (409, "idempotency_key_reused", quiver.IdempotencyKeyReusedError),
        (409, "request_in_progress", quiver.RequestInProgressError),
        (409, "tool_outcome_unknown", quiver.ToolOutcomeUnknownConflictError),
        (504, "tool_outcome_unknown", quiver.ToolOutcomeUnknownError),
        (409, "tool_not_configured", quiver.ToolNotConfiguredError),
        (413, "payload_too_large", quiver.PayloadTooLargeError),
        (422, "validation_error", quiver.ValidationError),
        (422, "invalid_arguments", quiver.InvalidArgumentsError),
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
                if code == "invalid_json":  # each code its own class, under the class of its kind
                    self.assertIsInstance(err, quiver.BadRequestError)
                if code == "invalid_arguments":
                    self.assertIsInstance(err, quiver.ValidationError)
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

    def test_bad_request_is_a_bad_request_whatever_the_status(self) -> None:
        # Quiver answers what it refuses before routing (a header block over its limit: 431; an Expect it
        # does not know: 417; HTTP/2.0: 505) with the code bad_request, whatever the status.
        client = self.make_client(max_retries=0)
        for status in (400, 431, 417, 505):
            with self.subTest(status=status):
                self.fake.push(status, {"error": "bad_request", "message": "The request's line and headers exceed "
                                        "1048576 bytes."}, {"X-Request-Id": "req_1"})
                with self.assertRaises(quiver.BadRequestError) as ctx:
                    client.tools.list()
                self.assertEqual((ctx.exception.status, ctx.exception.code), (status, "bad_request"))
                self.assertEqual(ctx.exception.request_id, "req_1")

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
