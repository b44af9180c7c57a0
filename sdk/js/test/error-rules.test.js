// Two rules every error follows: which class a 409/504 tool_outcome_unknown is, and didNothing. Against the
// scripted fake server (no Go toolchain needed).

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { scriptedServer, freePort } from "../test-support/harness.js";
import { fake, client, makeClient, useFakeServer } from "../test-support/fake-client.js";

useFakeServer();

const UNKNOWN = { error: "tool_outcome_unknown", message: "lost" };

describe("tool_outcome_unknown classes", () => {
  test("the 409 form is a ConflictError and a ToolOutcomeUnknownError", async () => {
    // A later answer for a terminal key is a 409: instanceof ConflictError (every 409) holds, and so does
    // instanceof ToolOutcomeUnknownError (both forms).
    fake.push(409, UNKNOWN);
    const err = await client.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
    assert.ok(err instanceof quiver.ConflictError, err.name);
    assert.ok(err instanceof quiver.ToolOutcomeUnknownError, err.name);
    assert.ok(err instanceof quiver.ToolOutcomeUnknownConflictError, err.name);
    assert.ok(err instanceof quiver.APIStatusError);
    assert.equal(err.name, "ToolOutcomeUnknownConflictError");
    assert.deepEqual([err.status, err.code], [409, "tool_outcome_unknown"]);
    assert.equal(fake.requests.length, 1); // still terminal: never retried
  });

  test("the 504 form is not a ConflictError", async () => {
    fake.push(504, UNKNOWN);
    const err = await client.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
    assert.ok(err instanceof quiver.ToolOutcomeUnknownError, err.name);
    assert.ok(!(err instanceof quiver.ConflictError), err.name);
    assert.ok(!(err instanceof quiver.ToolOutcomeUnknownConflictError), err.name);
    assert.equal(err.constructor, quiver.ToolOutcomeUnknownError);
    assert.equal(fake.requests.length, 1);
  });

  test("the other conflicts' classes do not take it for one of theirs", async () => {
    fake.push(409, UNKNOWN);
    const err = await client.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
    for (const Cls of [quiver.IdempotencyKeyReusedError, quiver.RequestInProgressError, quiver.ToolNotConfiguredError]) {
      assert.ok(!(err instanceof Cls), Cls.name);
    }
    fake.push(409, { error: "idempotency_key_reused", message: "m" });
    const reused = await client.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
    assert.ok(reused instanceof quiver.ConflictError);
    assert.ok(!(reused instanceof quiver.ToolOutcomeUnknownError));
    assert.ok(!(null instanceof quiver.ConflictError));
  });
});

describe("didNothing", () => {
  // API.md: each of these answers says the request was refused before anything was sent to the tool (or, for
  // unavailable, that nothing was dispatched); the key, if any, holds no outcome.
  const NOTHING = [
    [400, "bad_request"], [400, "invalid_json"], [400, "invalid_idempotency_key"], [400, "idempotency_key_required"],
    [401, "unauthorized"], [403, "forbidden"], [404, "not_found"], [409, "tool_not_configured"],
    [413, "payload_too_large"], [422, "validation_error"], [422, "invalid_arguments"], [429, "rate_limited"],
    [502, "tool_unreachable"], [502, "upstream_auth_failed"], [502, "upstream_refused"], [503, "unavailable"],
  ];
  // These do not: the key's earlier request ran or may have run, or the server may have acted.
  const MAYBE = [
    [409, "idempotency_key_reused"], [409, "request_in_progress"], [409, "tool_outcome_unknown"],
    [504, "tool_outcome_unknown"], [500, "internal"],
  ];

  async function errorFor(status, body) {
    const c = makeClient({ maxRetries: 0 });
    fake.push(status, body);
    return c.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
  }

  test("every code of API.md", async () => {
    for (const [status, code] of NOTHING) {
      const err = await errorFor(status, { error: code, message: "m" });
      assert.equal(err.didNothing, true, code);
      assert.equal(err.did_nothing, true, code);
    }
    for (const [status, code] of MAYBE) {
      const err = await errorFor(status, { error: code, message: "m" });
      assert.equal(err.didNothing, false, `${status} ${code}`);
      assert.equal(err.did_nothing, false, `${status} ${code}`);
    }
  });

  test("answers without Quiver's code prove nothing", async () => {
    for (const status of [400, 404, 409, 429, 500, 502, 503, 504, 418, 302]) {
      const err = await errorFor(status, "<html>proxy</html>");
      assert.equal(err.didNothing, false, String(status));
    }
  });

  test("client-side refusals and connections", async () => {
    const key = await client.tools.call(1, { action: "a", idempotencyKey: " op" }).catch((e) => e);
    assert.ok(key instanceof quiver.InvalidIdempotencyKeyError);
    assert.equal(key.didNothing, true);
    const nan = await client.tools.call(1, { action: "a", arguments: { x: NaN } }).catch((e) => e);
    assert.ok(nan instanceof quiver.InvalidRequestError);
    assert.equal(nan.didNothing, true);
    // A refused connection sent nothing; a cut one may have been acted on.
    const refused = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${await freePort()}`, maxRetries: 0 });
    const conn = await refused.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
    assert.ok(conn instanceof quiver.APIConnectionError);
    assert.equal(conn.didNothing, true);
    fake.push(200, "DROP");
    const cut = await makeClient({ maxRetries: 0 }).tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
    assert.ok(cut instanceof quiver.APIConnectionError);
    assert.equal(cut.didNothing, false);
    fake.push(200, "<html>not json</html>");
    const page = await client.tools.get(1).catch((e) => e);
    assert.ok(page instanceof quiver.QuiverError);
    assert.equal(page.didNothing, false);
  });

  test("an earlier attempt that may have run counts", async () => {
    // The first attempt's answer was lost (it may have run); the retry's 503 says only that the retry did
    // nothing: the error thrown must not say the operation did nothing.
    for (const [status, first] of [[200, "DROP"], [500, { error: "internal", message: "bug" }]]) {
      fake.push(status, first);
      fake.push(503, { error: "unavailable", message: "db down" });
      fake.push(503, { error: "unavailable", message: "db down" });
      const err = await client.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
      assert.ok(err instanceof quiver.ServiceUnavailableError, err.name);
      assert.equal(err.didNothing, false);
    }
    // Only attempts that did nothing before it: the last error's word holds.
    fake.push(429, { error: "rate_limited", message: "slow" }, { "Retry-After": "0" });
    fake.push(503, { error: "unavailable", message: "db down" });
    fake.push(422, { error: "invalid_arguments", message: "bad", fields: { q: "required" } });
    const err = await client.tools.call(1, { action: "a" }).catch((e) => e);
    assert.ok(err instanceof quiver.InvalidArgumentsError, err.name);
    assert.equal(err.didNothing, true);
  });

  test("a retry after a refused connection", async () => {
    const port = await freePort();
    const c = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${port}`, maxRetries: 1 });
    let server;
    c._transport.sleep = async () => {
      server = await scriptedServer({ port }); // between the refused attempt and the retry
      server.push(503, { error: "unavailable", message: "db down" });
    };
    try {
      const err = await c.tools.call(1, { action: "a", idempotencyKey: "op" }).catch((e) => e);
      assert.ok(err instanceof quiver.ServiceUnavailableError, err.name);
      assert.equal(err.didNothing, true);
    } finally {
      await server?.close();
    }
  });

  test("a body field of that name does not override it", async () => {
    const err = await errorFor(500, { error: "internal", message: "m", did_nothing: true, didNothing: true });
    assert.equal(err.didNothing, false);
    assert.equal(err.did_nothing, false);
    assert.equal(err.body.did_nothing, true);
  });
});

describe("unsafe requests retry what did nothing", () => {
  test("a refused connection is retried even without a key", async () => {
    // Nothing was sent, so repeating a create (or a call without a key) cannot do it twice.
    const port = await freePort();
    const c = new AgentClient({ apiKey: "x", baseUrl: `http://127.0.0.1:${port}`, maxRetries: 1 });
    let server;
    c._transport.sleep = async () => {
      server = await scriptedServer({ port }); // between the refused attempt and the retry
      server.push(201, { id: 7, name: "a", goal: "g", status: "draft", tools: [] });
    };
    try {
      assert.equal((await c.agents.create({ name: "a", goal: "g" })).id, 7);
      assert.deepEqual(server.requests.map((r) => r.method), ["POST"]);
    } finally {
      await server?.close();
    }
  });

  test("a cut connection is still not retried without a key", async () => {
    fake.push(200, "DROP");
    const err = await client.agents.create({ name: "a", goal: "g" }).catch((e) => e);
    assert.ok(err instanceof quiver.APIConnectionError, err.name);
    assert.equal(err.didNothing, false);
    assert.equal(fake.requests.length, 1);
  });
});
