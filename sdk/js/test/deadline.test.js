// A timeout longer than fetch's own. Node's fetch (undici) gives up by itself after 300 s without response
// headers, or between two chunks of a body, whatever the signal: a tools.call given `timeout: 600_000` for a
// long tool (an operator may set QUIVER_CALL_TIMEOUT above 5 minutes) threw APIConnectionError
// UND_ERR_HEADERS_TIMEOUT at 300 s. Scaled down here so as not to wait 5 minutes: fetch's limit is made
// 300 ms (the global dispatcher replaced by one like it, with shorter limits) and the SDK told so
// (`_transport.fetchOwnTimeout`), and a real quiver serve answers a call to a 2-second tool.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { startEnv } from "../test-support/harness.js";

const DISPATCHER = Symbol.for("undici.globalDispatcher.1"); // where Node's fetch keeps its dispatcher
const FETCH_LIMIT_MS = 300;

let ENV;
let slowTool;
let saved;

before(async () => {
  ENV = await startEnv();
  const client = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 30_000 });
  let tool = await client.tools.create({ mcpTool: "http-request" });
  tool = await client.tools.provideConfig(tool.id, { userResponse: { base_url: ENV.target.url } });
  slowTool = await client.tools.provideConfig(tool.id, { userResponse: { auth_type: "none" } });
  // fetch's dispatcher exists once fetch was used; make one of its kind with short limits.
  saved = globalThis[DISPATCHER];
  const Agent = saved.constructor;
  globalThis[DISPATCHER] = new Agent({ headersTimeout: FETCH_LIMIT_MS, bodyTimeout: FETCH_LIMIT_MS });
}, { timeout: 20 * 60_000 });

after(async () => {
  if (saved) globalThis[DISPATCHER] = saved;
  await ENV?.close();
});

function clientWith(timeout) {
  const c = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout, maxRetries: 0 });
  c._transport.fetchOwnTimeout = FETCH_LIMIT_MS;
  return c;
}

test("an attempt allowed longer than fetch's own timeouts waits for the answer", async () => {
  assert.ok(ENV.target.slowMs > FETCH_LIMIT_MS * 4);
  const result = await clientWith(30_000).tools.call(slowTool.id, { action: "get", arguments: { path: "/slow-deadline" } });
  assert.equal(result.isError, false);
  assert.equal(result.result.body.path, "/slow-deadline");
  // and the per-call timeout too
  const again = await clientWith(FETCH_LIMIT_MS).tools.call(slowTool.id, {
    action: "get",
    arguments: { path: "/slow-deadline-2" },
    timeout: 30_000,
  });
  assert.equal(again.result.body.path, "/slow-deadline-2");
});

test("the SDK's own deadline still holds on that path", async () => {
  const started = Date.now();
  const err = await clientWith(FETCH_LIMIT_MS * 3)
    .tools.call(slowTool.id, { action: "get", arguments: { path: "/slow-deadline-3" }, timeout: FETCH_LIMIT_MS * 3 })
    .catch((e) => e);
  assert.ok(err instanceof quiver.APITimeoutError, String(err));
  assert.ok(Date.now() - started < ENV.target.slowMs, `took ${Date.now() - started} ms`);
});

test("fetch's own timeout, where it is the shorter, is an APITimeoutError", async () => {
  const c = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 30_000, maxRetries: 0 });
  c._transport.fetchOwnTimeout = 60_000; // the SDK believes fetch waits longer than it does
  const err = await c.tools.call(slowTool.id, { action: "get", arguments: { path: "/slow-deadline-4" } }).catch((e) => e);
  assert.ok(err instanceof quiver.APITimeoutError, String(err));
  assert.match(err.message, /fetch/);
});
