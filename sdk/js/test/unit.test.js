// SDK behaviour against a scripted fake server: client config, encoding, error mapping, key validation.
// No Go toolchain needed; retries and timeouts are in retries.test.js, the real server in integration.test.js.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { freePort } from "../test-support/harness.js";
import { fake, client, delays, makeClient, lastBody, useFakeServer } from "../test-support/fake-client.js";

useFakeServer();

describe("client config", () => {
  test("client.runs says why it is not there", () => {
    // The seed's complete example ends with client.runs.create(...): a user who copies it gets the reason
    // and where to go, not "Cannot read properties of undefined".
    const c = new AgentClient({ apiKey: "k", baseUrl: "http://127.0.0.1:9" });
    assert.throws(() => c.runs.create({ agentId: 1 }), (err) => {
      assert.ok(err instanceof TypeError);
      assert.match(err.message, /Quiver does not run agents/);
      assert.match(err.message, /\/api\/v1\/agents\/\{id\}\/mcp/);
      return true;
    });
    assert.equal(JSON.stringify(c).includes("runs"), false);
  });

  test("env fallback", async () => {
    const saved = { k: process.env.QUIVER_API_KEY, u: process.env.QUIVER_BASE_URL };
    process.env.QUIVER_API_KEY = "from-env";
    process.env.QUIVER_BASE_URL = fake.url;
    try {
      const c = new AgentClient();
      assert.equal(c.baseUrl, fake.url);
      fake.push(200, { tools: [], next_cursor: null });
      await c.tools.list();
      assert.equal(fake.requests[0].headers["x-api-key"], "from-env");
    } finally {
      if (saved.k === undefined) delete process.env.QUIVER_API_KEY;
      else process.env.QUIVER_API_KEY = saved.k;
      if (saved.u === undefined) delete process.env.QUIVER_BASE_URL;
      else process.env.QUIVER_BASE_URL = saved.u;
    }
  });

  test("default base url", () => {
    const saved = process.env.QUIVER_BASE_URL;
    delete process.env.QUIVER_BASE_URL;
    try {
      assert.equal(new AgentClient({ apiKey: "x" }).baseUrl, "http://localhost:8080");
    } finally {
      if (saved !== undefined) process.env.QUIVER_BASE_URL = saved;
    }
  });

  test("headers, paths, objects with camelCase aliases", async () => {
    fake.push(201, {
      id: 7,
      mcp_tool: "tavily",
      is_configured: false,
      next_configuration_step: { step: "api_key", fields: [{ name: "TAVILY_API_KEY" }], authorization_url: "u" },
      created_at: "2026-11-30T05:21:00Z",
    });
    const tool = await client.tools.create({ mcpTool: "tavily" });
    const req = fake.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/api/v1/agents/custom-tools/");
    assert.equal(req.headers["x-api-key"], "k-test");
    assert.match(req.headers["content-type"], /^application\/json/);
    assert.match(req.headers["user-agent"], /^quiver-js\//);
    assert.deepEqual(lastBody(), { mcp_tool: "tavily" });
    assert.ok(tool instanceof quiver.Tool);
    assert.equal(tool.id, 7);
    assert.equal(tool.mcp_tool, "tavily");
    assert.equal(tool.mcpTool, "tavily");
    assert.equal(tool.isConfigured, false);
    assert.equal(tool.is_configured, false);
    assert.equal(tool.nextConfigurationStep.step, "api_key");
    assert.equal(tool.nextConfigurationStep.authorizationUrl, "u");
    assert.equal(tool.createdAt, "2026-11-30T05:21:00Z");
    // JSON and console output show exactly the server's fields
    assert.deepEqual(Object.keys(tool), ["id", "mcp_tool", "is_configured", "next_configuration_step", "created_at"]);
    assert.equal(JSON.parse(JSON.stringify(tool)).mcp_tool, "tavily");
  });

  test("create accepts mcp_tool too", async () => {
    fake.push(201, { id: 1 });
    await client.tools.create({ mcp_tool: "browser", name: "b" });
    assert.deepEqual(lastBody(), { mcp_tool: "browser", name: "b" });
  });
});

describe("encoding", () => {
  test("agents.update sends only given fields, both call styles", async () => {
    fake.push(200, { id: 3, name: "a", tools: [1, 2] });
    const agent = await client.agents.update(3, { tools: [1, { id: 2 }] });
    assert.equal(fake.requests[0].method, "PATCH");
    assert.equal(fake.requests[0].path, "/api/v1/agents/3/");
    assert.deepEqual(lastBody(), { tools: [1, 2] });
    assert.deepEqual(agent.tools, [1, 2]);
    fake.push(200, { id: 3 });
    await client.agents.update({ agentId: 3, name: "n" });
    assert.equal(fake.requests[1].path, "/api/v1/agents/3/");
    assert.deepEqual(lastBody(), { name: "n" });
  });

  test("call body, tool object, no key header", async () => {
    fake.push(200, {
      call_id: "c_1",
      tool: 5,
      action: "search",
      is_error: false,
      result: { some_field: 1 },
      structured_content: { some_field: 1, n: 1 },
      duration_ms: 3,
    });
    const result = await client.tools.call({ id: 5 }, { action: "search", arguments: { query: "q" } });
    assert.deepEqual(lastBody(), { tool: 5, action: "search", arguments: { query: "q" } });
    assert.equal(fake.requests[0].headers["idempotency-key"], undefined);
    assert.equal(result.callId, "c_1");
    assert.equal(result.isError, false);
    assert.equal(result.durationMs, 3);
    assert.deepEqual(result.result, { some_field: 1 });
    assert.equal(Object.getPrototypeOf(result.result), Object.prototype); // tool output stays plain JSON
    assert.equal(Object.getPrototypeOf(result.structured_content), Object.prototype); // and its structured content
    assert.deepEqual(result.structuredContent, { some_field: 1, n: 1 });
    assert.equal(result.replayed, false);
  });

  test("call by catalog name, key header, replayed", async () => {
    fake.push(200, { call_id: "c_2", tool: 5, action: "search", is_error: false, result: null }, { "Idempotent-Replayed": "true" });
    const result = await client.tools.call("tavily", { action: "search", arguments: {}, idempotencyKey: "k 1" });
    assert.equal(lastBody().tool, "tavily");
    assert.equal(fake.requests[0].headers["idempotency-key"], "k 1");
    assert.equal(result.replayed, true);
    fake.push(200, { call_id: "c_3" });
    await client.tools.call(1, { action: "a", idempotency_key: "snake" });
    assert.equal(fake.requests[1].headers["idempotency-key"], "snake");
  });

  test("delete resolves undefined on 204", async () => {
    fake.push(204);
    assert.equal(await client.tools.delete(4), undefined);
    assert.equal(fake.requests[0].method, "DELETE");
    assert.equal(fake.requests[0].path, "/api/v1/agents/custom-tools/4/");
  });

  test("provideConfig sends user_response", async () => {
    fake.push(200, { id: 4, is_configured: true, next_configuration_step: null });
    const tool = await client.tools.provideConfig(4, { userResponse: { TAVILY_API_KEY: "tvly-x" } });
    assert.deepEqual(lastBody(), { user_response: { TAVILY_API_KEY: "tvly-x" } });
    assert.equal(fake.requests[0].path, "/api/v1/agents/custom-tools/4/provide-config/");
    assert.equal(tool.isConfigured, true);
    assert.equal(tool.nextConfigurationStep, null);
  });

  test("pagination follows next_cursor", async () => {
    fake.push(200, { tools: [{ id: 1 }, { id: 2 }], next_cursor: "c2" });
    fake.push(200, { tools: [{ id: 3 }], next_cursor: "c3" });
    fake.push(200, { tools: [{ id: 4 }], next_cursor: null });
    const tools = await client.tools.list({ limit: 2 });
    assert.deepEqual(tools.map((t) => t.id), [1, 2, 3, 4]);
    assert.equal(fake.requests[0].path, "/api/v1/agents/custom-tools/?limit=2");
    assert.match(fake.requests[1].path, /cursor=c2/);
    assert.match(fake.requests[2].path, /cursor=c3/);
  });

  test("available with category", async () => {
    fake.push(200, { tools: [{ name: "tavily", type: "builtin", categories: ["search"] }] });
    const catalog = await client.tools.available({ category: "search" });
    assert.equal(fake.requests[0].path, "/api/v1/agents/tools/available/?category=search");
    assert.equal(catalog[0].name, "tavily");
    assert.ok(catalog[0] instanceof quiver.AvailableTool);
  });

  test("idempotency key path is escaped", async () => {
    fake.push(200, { key: "a/b c", state: "succeeded" });
    const state = await client.idempotencyKeys.get("a/b c");
    assert.equal(fake.requests[0].path, "/api/v1/idempotency-keys/a%2Fb%20c");
    assert.equal(state.state, "succeeded");
  });

  test("idempotency keys . and .. keep their path segment", async () => {
    // fetch's URL parser resolves "." and ".." segments (even as %2E) away: /idempotency-keys/.. would
    // become /api/v1/. They are valid keys, and the server accepts them as sent.
    for (const k of [".", ".."]) {
      fake.push(200, { key: k, state: "succeeded" });
      const state = await client.idempotencyKeys.get(k);
      assert.equal(fake.requests.at(-1).path, `/api/v1/idempotency-keys/${k}`);
      assert.equal(fake.requests.at(-1).method, "GET");
      assert.equal(fake.requests.at(-1).headers["x-api-key"], "k-test");
      assert.equal(state.key, k);
      assert.equal(state.state, "succeeded");
    }
    fake.push(404, { error: "not_found", message: "no such key" }, { "X-Request-Id": "rid-dot" });
    const err = await client.idempotencyKeys.get("..").catch((e) => e);
    assert.ok(err instanceof quiver.NotFoundError, String(err));
    assert.equal(err.requestId, "rid-dot");
    assert.equal(fake.requests.at(-1).path, "/api/v1/idempotency-keys/..");
  });

  test("dot segments through the node:http path: connection errors and timeouts", async () => {
    const port = await freePort();
    const c = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${port}`, maxRetries: 1 });
    const waits = [];
    c._transport.sleep = async (ms) => waits.push(ms);
    const err = await c.idempotencyKeys.get("..").catch((e) => e);
    assert.ok(err instanceof quiver.APIConnectionError, String(err));
    assert.equal(waits.length, 1); // a GET is retried
    const conns = [];
    const sock = net.createServer((s) => conns.push(s));
    await new Promise((r) => sock.listen(0, "127.0.0.1", r));
    try {
      const slow = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${sock.address().port}`, timeout: 300, maxRetries: 0 });
      const started = Date.now();
      const err2 = await slow.idempotencyKeys.get(".").catch((e) => e);
      assert.ok(err2 instanceof quiver.APITimeoutError, String(err2));
      assert.ok(Date.now() - started < 2000);
    } finally {
      for (const s of conns) s.destroy();
      await new Promise((r) => sock.close(r));
    }
  });
});

describe("errors", () => {
  const CASES = [
    [400, "invalid_json", quiver.InvalidJSONError],
    [400, "invalid_idempotency_key", quiver.InvalidIdempotencyKeyError],
    [400, "idempotency_key_required", quiver.IdempotencyKeyRequiredError],
    [401, "unauthorized", quiver.AuthenticationError],
    [403, "forbidden", quiver.PermissionDeniedError],
    [404, "not_found", quiver.NotFoundError],
    [409, "idempotency_key_reused", quiver.IdempotencyKeyReusedError],
    [409, "request_in_progress", quiver.RequestInProgressError],
    [409, "tool_outcome_unknown", quiver.ToolOutcomeUnknownConflictError],
    [504, "tool_outcome_unknown", quiver.ToolOutcomeUnknownError],
    [409, "tool_not_configured", quiver.ToolNotConfiguredError],
    [413, "payload_too_large", quiver.PayloadTooLargeError],
    [422, "validation_error", quiver.ValidationError],
    [422, "invalid_arguments", quiver.InvalidArgumentsError],
    [429, "rate_limited", quiver.RateLimitError],
    [500, "internal", quiver.InternalServerError],
    [502, "tool_unreachable", quiver.ToolUnreachableError],
    [502, "upstream_auth_failed", quiver.UpstreamAuthFailedError],
    [502, "upstream_refused", quiver.UpstreamRefusedError],
    [503, "unavailable", quiver.ServiceUnavailableError],
  ];

  test("mapping by code", async () => {
    const c = makeClient({ maxRetries: 0 });
    for (const [status, code, Cls] of CASES) {
      fake.push(status, { error: code, message: `m ${code}`, extra_field: 1 }, { "X-Request-Id": "rid-1", "Retry-After": "3" });
      const err = await c.tools.call(1, { action: "a", idempotencyKey: "k" }).catch((e) => e);
      assert.ok(err instanceof Cls, `${code}: got ${err.name}`);
      assert.ok(err instanceof quiver.QuiverError);
      assert.ok(err instanceof quiver.APIStatusError);
      if (code === "invalid_json") assert.ok(err instanceof quiver.BadRequestError); // each code its own class, under its kind's
      if (code === "invalid_arguments") assert.ok(err instanceof quiver.ValidationError);
      assert.equal(err.name, Cls.name);
      assert.equal(err.status, status);
      assert.equal(err.statusCode, status);
      assert.equal(err.code, code);
      assert.equal(err.message, `m ${code}`);
      assert.equal(err.requestId, "rid-1");
      assert.equal(err.retryAfter, 3);
      assert.equal(err.extra_field, 1);
      assert.equal(err.extraField, 1);
      assert.equal(err.body.error, code);
      assert.match(String(err), new RegExp(code));
    }
  });

  test("mapping by status when the code is unknown", async () => {
    // 4xx map by status; every 5xx without a Quiver code is the generic InternalServerError.
    const c = makeClient({ maxRetries: 0 });
    const cases = [
      [400, quiver.BadRequestError], [401, quiver.AuthenticationError], [403, quiver.PermissionDeniedError],
      [404, quiver.NotFoundError], [409, quiver.ConflictError], [422, quiver.ValidationError],
      [429, quiver.RateLimitError], [500, quiver.InternalServerError], [502, quiver.InternalServerError],
      [503, quiver.InternalServerError], [504, quiver.InternalServerError], [418, quiver.APIStatusError],
    ];
    for (const [status, Cls] of cases) {
      fake.push(status, "<html>oops</html>");
      const err = await c.tools.get(1).catch((e) => e);
      assert.ok(err instanceof Cls, `${status}: ${err.name}`);
      assert.equal(err.constructor, Cls, `${status}: ${err.name}`);
      assert.equal(err.status, status);
      assert.equal(err.code, null);
      assert.match(err.message, /oops/);
    }
  });

  test("bad_request is a BadRequestError whatever the status", async () => {
    // Quiver answers what it refuses before routing (a header block over its limit: 431; an Expect it does
    // not know: 417; HTTP/2.0: 505) with the code bad_request, whatever the status.
    const c = makeClient({ maxRetries: 0 });
    for (const status of [400, 431, 417, 505]) {
      fake.push(status, { error: "bad_request", message: "The request's line and headers exceed 1048576 bytes." }, { "X-Request-Id": "req_1" });
      const err = await c.tools.list().catch((e) => e);
      assert.ok(err instanceof quiver.BadRequestError, `${status}: ${err.name}`);
      assert.deepEqual([err.status, err.code, err.requestId], [status, "bad_request", "req_1"]);
    }
  });

  test("a code-less 5xx is not a Quiver claim", async () => {
    // A proxy's 502/503/504 says nothing of the tool or of what the server did.
    const c = makeClient({ maxRetries: 0 });
    const specific = [
      quiver.ToolUnreachableError,
      quiver.UpstreamAuthFailedError,
      quiver.UpstreamRefusedError,
      quiver.ServiceUnavailableError,
      quiver.ToolOutcomeUnknownError,
    ];
    const cases = [
      [502, "<html>502 Bad Gateway</html>"],
      [503, "upstream connect error or disconnect/reset before headers"],
      [504, "<html>504 Gateway Time-out</html>"],
      [502, { error: "bad_gateway", message: "not a Quiver code" }],
    ];
    for (const [status, body] of cases) {
      fake.push(status, body);
      const err = await c.tools.call(1, { action: "a", idempotencyKey: "k" }).catch((e) => e);
      assert.ok(err instanceof quiver.InternalServerError, `${status}: ${err.name}`);
      for (const Cls of specific) assert.ok(!(err instanceof Cls), `${status}: ${err.name}`);
      assert.equal(err.status, status);
    }
  });

  test("Retry-After as an HTTP-date", async () => {
    const c = makeClient({ maxRetries: 0 });
    fake.push(429, { error: "rate_limited", message: "slow" }, { "Retry-After": new Date(Date.now() + 30_000).toUTCString() });
    let err = await c.tools.list().catch((e) => e);
    assert.ok(err instanceof quiver.RateLimitError);
    assert.ok(err.retryAfter > 28 && err.retryAfter <= 30, String(err.retryAfter));
    fake.push(429, { error: "rate_limited", message: "slow" }, { "Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT" });
    err = await c.tools.list().catch((e) => e);
    assert.equal(err.retryAfter, 0);
    fake.push(429, { error: "rate_limited", message: "slow" }, { "Retry-After": "soon" });
    err = await c.tools.list().catch((e) => e);
    assert.equal(err.retryAfter, null);
    // An HTTP-date is honoured as the retry delay.
    fake.push(503, { error: "unavailable", message: "db" }, { "Retry-After": new Date(Date.now() + 10_000).toUTCString() });
    fake.push(200, { agents: [] });
    await client.agents.list();
    assert.equal(delays.length, 1);
    assert.ok(delays[0] > 8000 && delays[0] <= 10_000, String(delays[0]));
  });

  test("extra fields: fields and nextConfigurationStep", async () => {
    fake.push(422, { error: "validation_error", message: "bad", fields: { tools: "unknown: 9" } });
    const err = await client.agents.create({ name: "a", goal: "g", tools: [9] }).catch((e) => e);
    assert.ok(err instanceof quiver.ValidationError);
    assert.deepEqual(err.fields, { tools: "unknown: 9" });
    const step = { step: "api_key", type: "form" };
    fake.push(409, { error: "tool_not_configured", message: "configure", next_configuration_step: step });
    const err2 = await client.tools.call(1, { action: "search" }).catch((e) => e);
    assert.ok(err2 instanceof quiver.ToolNotConfiguredError);
    assert.deepEqual({ ...err2.nextConfigurationStep }, step);
    assert.deepEqual({ ...err2.next_configuration_step }, step);
  });

  test("tool_not_configured's step is a ConfigurationStep like a tool's, with camelCase aliases", async () => {
    const step = { step: "oauth", type: "oauth", authorization_url: "https://auth.example/x", fields: [{ name: "scope" }] };
    fake.push(409, { error: "tool_not_configured", message: "configure", next_configuration_step: step });
    const err = await client.tools.call(1, { action: "search" }).catch((e) => e);
    assert.ok(err instanceof quiver.ToolNotConfiguredError);
    fake.push(200, { id: 1, is_configured: false, next_configuration_step: step });
    const tool = await client.tools.get(1);
    for (const fromError of [err.nextConfigurationStep, err.next_configuration_step]) {
      assert.ok(fromError instanceof quiver.ConfigurationStep);
      assert.equal(Object.getPrototypeOf(fromError), Object.getPrototypeOf(tool.nextConfigurationStep));
      assert.equal(fromError.authorizationUrl, tool.nextConfigurationStep.authorizationUrl);
      assert.equal(fromError.authorizationUrl, "https://auth.example/x");
      assert.equal(fromError.fields[0].name, "scope");
    }
    assert.deepEqual(err.body.next_configuration_step, step); // the body stays as sent
    fake.push(409, { error: "tool_not_configured", message: "configure", next_configuration_step: null });
    const err2 = await client.tools.call(1, { action: "search" }).catch((e) => e);
    assert.equal(err2.nextConfigurationStep, null);
  });

  test("connection refused is APIConnectionError; GETs are retried", async () => {
    const port = await freePort();
    const c = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${port}`, maxRetries: 1 });
    const waits = [];
    c._transport.sleep = async (ms) => waits.push(ms);
    const err = await c.tools.list().catch((e) => e);
    assert.ok(err instanceof quiver.APIConnectionError, String(err));
    assert.equal(err.status, null);
    assert.equal(waits.length, 1);
  });
});

describe("idempotency key validation", () => {
  test("invalid keys are never sent", async () => {
    for (const bad of ["", " lead", "trail ", "x".repeat(256), "caf\u00e9", "tab\there", "nl\n", "\x7f"]) {
      await assert.rejects(client.tools.call(1, { action: "post", idempotencyKey: bad }), (e) => {
        assert.ok(e instanceof quiver.InvalidIdempotencyKeyError, `${JSON.stringify(bad)}: ${e}`);
        assert.ok(e instanceof quiver.QuiverError);
        assert.equal(e.code, "invalid_idempotency_key");
        return true;
      });
    }
    for (const badType of [123, {}, true]) {
      await assert.rejects(client.tools.call(1, { action: "post", idempotencyKey: badType }), TypeError);
    }
    assert.throws(() => quiver.validateIdempotencyKey(" x"), quiver.InvalidIdempotencyKeyError);
    assert.equal(fake.requests.length, 0);
  });

  test("valid keys are sent unchanged", async () => {
    for (const good of ["a", "x".repeat(255), "inner space ok", "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"]) {
      fake.push(200, { call_id: "c", tool: 1, action: "post", is_error: false, result: {} });
      await client.tools.call(1, { action: "post", idempotencyKey: good });
      assert.equal(fake.requests.at(-1).headers["idempotency-key"], good);
    }
  });
});
