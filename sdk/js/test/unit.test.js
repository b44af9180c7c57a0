// SDK behaviour against a scripted fake server: error mapping, retries, key validation, encoding.
// No Go toolchain needed; everything about the real server is in integration.test.js.

import { test, describe, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { scriptedServer, freePort } from "../test-support/harness.js";

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
    const c = makeClient({ maxRetries: 0 });
    const cases = [
      [400, quiver.BadRequestError], [401, quiver.AuthenticationError], [403, quiver.PermissionDeniedError],
      [404, quiver.NotFoundError], [409, quiver.ConflictError], [422, quiver.ValidationError],
      [429, quiver.RateLimitError], [500, quiver.InternalServerError], [502, quiver.ToolUnreachableError],
      [503, quiver.ServiceUnavailableError], [504, quiver.InternalServerError], [418, quiver.APIStatusError],
    ];
    for (const [status, Cls] of cases) {
      fake.push(status, "<html>oops</html>");
      const err = await c.tools.get(1).catch((e) => e);
      assert.ok(err instanceof Cls, `${status}: ${err.name}`);
      assert.equal(err.status, status);
      assert.equal(err.code, null);
      assert.match(err.message, /oops/);
    }
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
    assert.deepEqual(err2.nextConfigurationStep, step);
    assert.deepEqual(err2.next_configuration_step, step);
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
