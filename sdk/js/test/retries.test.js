// SDK behaviour against a scripted fake server: retries, timeouts and errors raised before any request.
// No Go toolchain needed; the rest of the fake-server suite is in unit.test.js.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { scriptedServer, freePort, trickleServer } from "../test-support/harness.js";
import { fake, client, delays, makeClient, lastBody, useFakeServer } from "../test-support/fake-client.js";

useFakeServer();

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

  test("a DELETE after Quiver's own 500 is done: the retry's 404 is success", async () => {
    // Quiver's 500 on a write whose database connection failed mid-commit says the change "may or may not
    // have been applied" (and any 500 is a bug that may come after the delete): that attempt deleted it.
    fake.push(500, {
      error: "internal",
      request_id: "r1",
      message: "The database connection failed while this change was being saved, so it may or may not have been applied.",
    });
    fake.push(404, NOT_FOUND);
    assert.equal(await client.tools.delete(9), undefined);
    fake.push(500, { error: "internal", message: "bug", request_id: "r2" });
    fake.push(404, NOT_FOUND);
    assert.equal(await client.agents.delete(9), undefined);
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
