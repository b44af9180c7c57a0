// Timeouts that are not the SDK's own. Node's fetch (undici) gives up connecting by itself after 10 s (its
// connect.timeout: the TCP connect, and the TLS handshake for https), whatever the SDK's timeout; and the
// system gives up on a connection with ETIMEDOUT. Both ended the attempt with APIConnectionError, while
// fetch's headers and body timeouts were APITimeoutError, and the Python SDK's connect timeout and
// ETIMEDOUT (its TimeoutError) are APITimeoutError too: a timeout is a timeout. Scaled down: fetch's
// dispatcher is replaced by one like it whose connect timeout is 200 ms, and the server accepts the
// connection but never answers the TLS handshake.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";

const DISPATCHER = Symbol.for("undici.globalDispatcher.1"); // where Node's fetch keeps its dispatcher

let silent;
let saved;

before(async () => {
  // fetch's dispatcher exists once fetch was used.
  const plain = http.createServer((req, res) => res.end("ok"));
  await new Promise((resolve) => plain.listen(0, "127.0.0.1", resolve));
  await (await fetch(`http://127.0.0.1:${plain.address().port}/`)).text();
  await new Promise((resolve) => plain.close(resolve));
  saved = globalThis[DISPATCHER];
  globalThis[DISPATCHER] = new saved.constructor({ connect: { timeout: 200 } });

  silent = net.createServer((socket) => socket.on("error", () => {}));
  await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
});

after(async () => {
  if (saved) globalThis[DISPATCHER] = saved;
  silent?.close();
});

test("fetch's own connect timeout is an APITimeoutError, retried like any timeout", async () => {
  const c = new AgentClient({ apiKey: "k", baseUrl: `https://127.0.0.1:${silent.address().port}`, timeout: 20_000, maxRetries: 1 });
  const delays = [];
  c._transport.sleep = async (ms) => {
    delays.push(ms);
  };
  const started = Date.now();
  const err = await c.tools.list().catch((e) => e);
  assert.ok(err instanceof quiver.APITimeoutError, String(err));
  assert.match(err.message, /fetch.*UND_ERR_CONNECT_TIMEOUT/);
  assert.equal(delays.length, 1); // a GET: retried once
  assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
});

test("the system's own connect timeout (ETIMEDOUT) is an APITimeoutError too, as in the Python SDK", async () => {
  // What fetch rejects with when the kernel gives up on a connection (no SYN-ACK for ~2 minutes, or a
  // connection whose peer vanished): Python reads that OSError as TimeoutError, an APITimeoutError.
  const etimedout = async () => {
    throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ETIMEDOUT 10.0.0.1:443"), { code: "ETIMEDOUT" }) });
  };
  const c = new AgentClient({ apiKey: "k", baseUrl: "https://10.0.0.1", maxRetries: 0, fetch: etimedout });
  const err = await c.tools.list().catch((e) => e);
  assert.ok(err instanceof quiver.APITimeoutError, String(err));
  assert.match(err.message, /ETIMEDOUT/);
});
