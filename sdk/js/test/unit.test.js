// SDK behaviour against a scripted fake server: error mapping, retries, key validation, encoding.
// No Go toolchain needed; everything about the real server is in integration.test.js.

import { test, describe, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { scriptedServer, freePort, trickleServer } from "../test-support/harness.js";

let fake;
let client;
let delays;

function makeClient(options = {}) {
  const c = new AgentClient({ apiKey: "k-test", baseUrl: fake.url + "/", ...options });
  delays = [];
  c._transport.sleep = async (ms) => {
    delays.push(ms);
  };
  return c;
}

const lastBody = () => JSON.parse(fake.requests.at(-1).body);

beforeEach(async () => {
  fake = await scriptedServer();
  client = makeClient();
});

afterEach(async () => {
  await fake.close();
});

describe("client config", () => {
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
    fake.push(200, { call_id: "c_1", tool: 5, action: "search", is_error: false, result: { some_field: 1 }, duration_ms: 3 });
    const result = await client.tools.call({ id: 5 }, { action: "search", arguments: { query: "q" } });
    assert.deepEqual(lastBody(), { tool: 5, action: "search", arguments: { query: "q" } });
    assert.equal(fake.requests[0].headers["idempotency-key"], undefined);
    assert.equal(result.callId, "c_1");
    assert.equal(result.isError, false);
    assert.equal(result.durationMs, 3);
    assert.deepEqual(result.result, { some_field: 1 });
    assert.equal(Object.getPrototypeOf(result.result), Object.prototype); // tool output stays plain JSON
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
    [400, "invalid_json", quiver.BadRequestError],
    [400, "invalid_idempotency_key", quiver.InvalidIdempotencyKeyError],
    [400, "idempotency_key_required", quiver.IdempotencyKeyRequiredError],
    [401, "unauthorized", quiver.AuthenticationError],
    [403, "forbidden", quiver.PermissionDeniedError],
    [404, "not_found", quiver.NotFoundError],
    [409, "idempotency_key_reused", quiver.IdempotencyKeyReusedError],
    [409, "request_in_progress", quiver.RequestInProgressError],
    [409, "tool_outcome_unknown", quiver.ToolOutcomeUnknownError],
    [504, "tool_outcome_unknown", quiver.ToolOutcomeUnknownError],
    [409, "tool_not_configured", quiver.ToolNotConfiguredError],
    [413, "payload_too_large", quiver.PayloadTooLargeError],
    [422, "validation_error", quiver.ValidationError],
    [422, "invalid_arguments", quiver.ValidationError],
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

describe("retries", () => {
  const OK = { call_id: "c_ok", tool: 1, action: "a", is_error: false, result: {} };

  test("call without key: no retry on 500, drop or 502", async () => {
    fake.push(500, { error: "internal", message: "bug", request_id: "r" });
    await assert.rejects(client.tools.call(1, { action: "a" }), quiver.InternalServerError);
    fake.push(200, "DROP");
    await assert.rejects(client.tools.call(1, { action: "a" }), quiver.APIConnectionError);
    fake.push(502, { error: "tool_unreachable", message: "down" });
    await assert.rejects(client.tools.call(1, { action: "a" }), quiver.ToolUnreachableError);
    assert.equal(fake.requests.length, 3);
    assert.deepEqual(delays, []);
  });

  test("call without key: retried on 429 and 503, honouring Retry-After", async () => {
    fake.push(429, { error: "rate_limited", message: "slow" }, { "Retry-After": "2" });
    fake.push(503, { error: "unavailable", message: "db down" });
    fake.push(200, OK);
    const result = await client.tools.call(1, { action: "a" });
    assert.equal(result.callId, "c_ok");
    assert.equal(fake.requests.length, 3);
    assert.equal(delays[0], 2000);
    assert.equal(delays.length, 2);
  });

  test("call with key: retried with the same key and body", async () => {
    fake.push(200, "DROP");
    fake.push(409, { error: "request_in_progress", message: "wait" }, { "Retry-After": "1" });
    fake.push(200, OK, { "Idempotent-Replayed": "true" });
    const result = await client.tools.call(1, { action: "a", arguments: { n: 1 }, idempotencyKey: "op-1" });
    assert.equal(result.replayed, true);
    assert.equal(fake.requests.length, 3);
    assert.deepEqual(new Set(fake.requests.map((r) => r.headers["idempotency-key"])), new Set(["op-1"]));
    assert.equal(new Set(fake.requests.map((r) => r.body)).size, 1);
    assert.equal(delays[1], 1000);
  });

  test("call with key: gives up after maxRetries with exponential backoff", async () => {
    for (let i = 0; i < 3; i++) fake.push(500, { error: "internal", message: "bug" });
    await assert.rejects(client.tools.call(1, { action: "a", idempotencyKey: "op-2" }), quiver.InternalServerError);
    assert.equal(fake.requests.length, 3);
    assert.equal(delays.length, 2);
    assert.ok(delays[0] < delays[1]);
  });

  test("tool_outcome_unknown is terminal", async () => {
    fake.push(504, { error: "tool_outcome_unknown", message: "lost" });
    await assert.rejects(client.tools.call(1, { action: "a", idempotencyKey: "op-3" }), quiver.ToolOutcomeUnknownError);
    fake.push(409, { error: "tool_outcome_unknown", message: "lost" });
    await assert.rejects(client.tools.call(1, { action: "a", idempotencyKey: "op-3" }), quiver.ToolOutcomeUnknownError);
    assert.equal(fake.requests.length, 2);
  });

  test("deterministic upstream refusals are not retried, even when safe to repeat", async () => {
    // A retry would meet the fake's default 200 and succeed.
    const codes = [
      ["upstream_auth_failed", quiver.UpstreamAuthFailedError],
      ["upstream_refused", quiver.UpstreamRefusedError],
    ];
    const sends = [
      ["call with key", () => client.tools.call(1, { action: "a", idempotencyKey: "op-r" })],
      ["get", () => client.tools.get(1)],
    ];
    for (const [code, Cls] of codes) {
      for (const [name, send] of sends) {
        const before = fake.requests.length;
        fake.push(502, { error: code, message: "refused" });
        await assert.rejects(send(), Cls, `${code}, ${name}`);
        assert.equal(fake.requests.length, before + 1, `${code}, ${name}`);
        assert.deepEqual(delays, [], `${code}, ${name}`);
      }
    }
  });

  test("maxRetries is configurable", async () => {
    let c = makeClient({ maxRetries: 0 });
    fake.push(503, { error: "unavailable", message: "x" });
    await assert.rejects(c.tools.list(), quiver.ServiceUnavailableError);
    assert.equal(fake.requests.length, 1);
    c = makeClient({ maxRetries: 4 });
    for (let i = 0; i < 4; i++) fake.push(502, { error: "tool_unreachable", message: "x" });
    fake.push(200, { id: 1 });
    assert.equal((await c.tools.get(1)).id, 1);
    assert.equal(fake.requests.length, 6);
  });

  test("GET and DELETE are retried", async () => {
    fake.push(200, "DROP");
    fake.push(500, { error: "internal", message: "x" });
    fake.push(200, { id: 9, name: "a" });
    assert.equal((await client.agents.get(9)).id, 9);
    fake.push(200, "DROP");
    fake.push(204);
    await client.agents.delete(9);
    assert.equal(fake.requests.length, 5);
  });

  const NOT_FOUND = { error: "not_found", message: "Agent 9 does not exist." };

  test("a DELETE whose answer was lost is done: the retry's 404 is success", async () => {
    fake.push(200, "DROP"); // the first DELETE ran; its answer is lost
    fake.push(404, NOT_FOUND);
    assert.equal(await client.agents.delete(9), undefined);
    fake.push(502, "<html>Bad Gateway</html>"); // a proxy's: the DELETE may have run behind it
    fake.push(404, NOT_FOUND);
    assert.equal(await client.tools.delete(9), undefined);
    assert.deepEqual(fake.requests.map((r) => r.method), ["DELETE", "DELETE", "DELETE", "DELETE"]);
  });

  test("a DELETE's 404 is an error unless an earlier attempt may have run", async () => {
    fake.push(404, NOT_FOUND); // the first attempt
    await assert.rejects(client.agents.delete(9), quiver.NotFoundError);
    fake.push(503, { error: "unavailable", message: "db down" }); // Quiver's word: nothing done
    fake.push(404, NOT_FOUND);
    await assert.rejects(client.tools.delete(9), quiver.NotFoundError);
    fake.push(200, "DROP");
    fake.push(404, { message: "no such page" }); // a 404 without Quiver's code
    await assert.rejects(client.tools.delete(9), quiver.NotFoundError);
    fake.push(200, "DROP"); // only a DELETE: a GET's 404 stays an error
    fake.push(404, NOT_FOUND);
    await assert.rejects(client.agents.get(9), quiver.NotFoundError);
    assert.equal(fake.requests.length, 7);
  });

  test("a DELETE after a refused connection: the 404 is still NotFoundError", async () => {
    const port = await freePort();
    const c = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${port}`, maxRetries: 1 });
    let server;
    c._transport.sleep = async () => {
      server = await scriptedServer({ port }); // between the refused attempt and the retry
      server.push(404, NOT_FOUND);
    };
    try {
      await assert.rejects(c.agents.delete(9), quiver.NotFoundError); // nothing was sent the first time
      assert.equal(server.requests.length, 1);
    } finally {
      await server?.close();
    }
  });

  test("creates, provideConfig and update are not retried on a drop or 500", async () => {
    fake.push(200, "DROP");
    await assert.rejects(client.tools.create({ mcpTool: "tavily" }), quiver.APIConnectionError);
    fake.push(500, { error: "internal", message: "x" });
    await assert.rejects(client.agents.create({ name: "a", goal: "b" }), quiver.InternalServerError);
    fake.push(200, "DROP");
    await assert.rejects(client.tools.provideConfig(1, { userResponse: { a: "b" } }), quiver.APIConnectionError);
    fake.push(200, "DROP");
    await assert.rejects(client.agents.update(1, { name: "x" }), quiver.APIConnectionError);
    assert.equal(fake.requests.length, 4);
  });

  test("code-less answers are not retried for requests that are not safe to repeat", async () => {
    // A proxy's answer without Quiver's code does not prove the request did nothing.
    const unsafe = {
      "agents.create": () => client.agents.create({ name: "a", goal: "g" }),
      "tools.create": () => client.tools.create({ mcpTool: "tavily" }),
      "tools.call without key": () => client.tools.call(1, { action: "a" }),
      "agents.update": () => client.agents.update(1, { name: "x" }),
      provideConfig: () => client.tools.provideConfig(1, { userResponse: { a: "b" } }),
    };
    const answers = [
      [503, "upstream connect error or disconnect/reset before headers. reset reason: overflow"],
      [502, "<html>502 Bad Gateway</html>"],
      [504, "<html>504 Gateway Time-out</html>"],
      [500, "oops"],
      [429, "<html>429 Too Many Requests</html>"],
    ];
    for (const [name, send] of Object.entries(unsafe)) {
      for (const [status, body] of answers) {
        const before = fake.requests.length;
        fake.push(status, body); // a retry would get the default 200 and succeed
        const err = await send().catch((e) => e);
        assert.ok(err instanceof quiver.APIStatusError, `${name} ${status}: ${err}`);
        assert.equal(err.status, status);
        assert.equal(fake.requests.length, before + 1, `${name} ${status} was retried`);
        assert.deepEqual(delays, []);
      }
    }
  });

  test("code-less answers are retried for safe requests", async () => {
    fake.push(503, "upstream connect error or disconnect/reset before headers");
    fake.push(502, "<html>502 Bad Gateway</html>");
    fake.push(200, { id: 1 });
    assert.equal((await client.tools.get(1)).id, 1);
    fake.push(504, "<html>504 Gateway Time-out</html>");
    fake.push(200, OK);
    assert.equal((await client.tools.call(1, { action: "a", idempotencyKey: "op-5" })).callId, "c_ok");
    assert.equal(fake.requests.length, 5);
    assert.equal(delays.length, 3);
  });

  test("Retry-After over 60 s gives up at once", async () => {
    for (const [status, code] of [[429, "rate_limited"], [503, "unavailable"], [409, "request_in_progress"]]) {
      const before = fake.requests.length;
      fake.push(status, { error: code, message: "later" }, { "Retry-After": "61" });
      const err = await client.tools.call(1, { action: "a", idempotencyKey: "op-6" }).catch((e) => e);
      assert.equal(err.code, code);
      assert.equal(err.retryAfter, 61);
      assert.equal(fake.requests.length, before + 1);
      assert.deepEqual(delays, []);
    }
    fake.push(429, { error: "rate_limited", message: "soon" }, { "Retry-After": "60" });
    fake.push(200, OK);
    await client.tools.call(1, { action: "a" });
    assert.deepEqual(delays, [60_000]);
  });

  test("creates are retried on 429", async () => {
    fake.push(429, { error: "rate_limited", message: "x" }, { "Retry-After": "0" });
    fake.push(201, { id: 1, mcp_tool: "browser", is_configured: true, next_configuration_step: null });
    assert.equal((await client.tools.create({ mcpTool: "browser" })).id, 1);
    assert.deepEqual(delays, [0]);
  });

  test("timeout is APITimeoutError", async () => {
    const conns = [];
    const sock = net.createServer((c) => conns.push(c)); // accepts, never answers
    await new Promise((r) => sock.listen(0, "127.0.0.1", r));
    try {
      const c = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${sock.address().port}`, timeout: 300, maxRetries: 0 });
      const err = await c.tools.call(1, { action: "a", idempotencyKey: "k" }).catch((e) => e);
      assert.ok(err instanceof quiver.APITimeoutError, String(err));
      assert.ok(err instanceof quiver.APIConnectionError);
    } finally {
      for (const c of conns) c.destroy();
      await new Promise((r) => sock.close(r));
    }
  });
});

describe("timeout is a deadline for the whole attempt", () => {
  const BODY = '{"id": 1, "name": "trickled", "n":1}'; // 36 bytes
  const response = (status = "200 OK") =>
    `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\nConnection: close\r\n\r\n${BODY}`;

  async function check(server, timeout = 1000) {
    try {
      const c = new AgentClient({ apiKey: "x", baseUrl: server.url, timeout, maxRetries: 0 });
      const started = Date.now();
      const err = await c.tools.get(1).catch((e) => e);
      const elapsed = Date.now() - started;
      assert.ok(err instanceof quiver.APITimeoutError, String(err));
      assert.ok(elapsed < timeout + 600 && elapsed >= timeout - 50, `took ${elapsed} ms`);
    } finally {
      await server.close();
    }
  }

  test("trickled body", async () => {
    const raw = response();
    await check(await trickleServer({ response: raw, head: raw.length - BODY.length, intervalMs: 300 }));
  });

  test("trickled status line and headers", async () => {
    await check(await trickleServer({ response: response(), head: 0, intervalMs: 100 }));
  });

  test("trickled error body", async () => {
    const raw = response("500 Internal Server Error");
    await check(await trickleServer({ response: raw, head: raw.length - BODY.length, intervalMs: 300 }));
  });
});

describe("local errors", () => {
  async function assertRefused(promise, ...fragments) {
    const err = await promise.catch((e) => e);
    assert.ok(err instanceof quiver.InvalidRequestError, String(err));
    assert.ok(err instanceof quiver.QuiverError);
    assert.ok(!(err instanceof quiver.APIConnectionError));
    assert.equal(err.status, null);
    for (const f of fragments) assert.ok(err.message.includes(f), `${err.message} lacks ${f}`);
    assert.equal(fake.requests.length, 0);
    assert.deepEqual(delays, []);
    return err;
  }

  test("an API key that cannot be a header is refused before any request", async () => {
    for (const bad of ["k-test\u20ac", "k-\u00e9\u4e2d", "k\r\nX-Evil: 1", "k\u0000"]) {
      const c = makeClient({ apiKey: bad });
      const err = await assertRefused(c.tools.list(), "X-API-KEY");
      assert.ok(!err.message.includes(bad), "the key is a secret: never in the message");
      await assertRefused(c.tools.call(1, { action: "a", idempotencyKey: "k" }), "X-API-KEY");
      await assertRefused(c.idempotencyKeys.get(".."), "X-API-KEY");
    }
  });

  test("a default header that cannot be a header is refused", async () => {
    const c = makeClient({ defaultHeaders: { "X-Trace": "caf\u00e9 \u2615" } });
    await assertRefused(c.agents.list(), "X-Trace", "U+2615");
    const named = makeClient({ defaultHeaders: { "bad name": "x" } });
    await assertRefused(named.agents.list(), "bad name");
  });

  test("a Latin-1 header value is sent", async () => {
    const c = makeClient({ defaultHeaders: { "X-Note": "caf\u00e9" } });
    fake.push(200, { agents: [] });
    await c.agents.list();
    assert.equal(fake.requests.length, 1);
  });

  test("non-ASCII arguments are sent as UTF-8", async () => {
    fake.push(200, { call_id: "c" });
    const text = "caf\u00e9 \u4e2d \u{1F600}";
    await client.tools.call(1, { action: "a", arguments: { q: text }, idempotencyKey: "k" });
    assert.deepEqual(lastBody(), { tool: 1, action: "a", arguments: { q: text } });
  });
});
