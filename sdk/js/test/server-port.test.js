// The test server is this suite's own, even when another server took its port first. startQuiver picks a
// free port, then starts `quiver serve` on it; another process may bind it in between. It waited for
// /healthz to answer 200, which another quiver serve (another test's, on this shared machine) answers too:
// the suite then ran against a server that knows none of its keys.

import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";

import { AgentClient } from "quiver-sdk";
import { buildBinary, freePort, startQuiver } from "../test-support/harness.js";

test("a port taken by another server is not mistaken for ours", { timeout: 20 * 60_000 }, async () => {
  // Answers /healthz as any quiver serve does, and 401 to every API request (it has other keys).
  const other = http.createServer((req, res) => {
    const ok = req.url === "/healthz";
    res.writeHead(ok ? 200 : 401, { "Content-Type": "application/json" });
    res.end(ok ? '{"status":"ok"}' : '{"error":"unauthorized","message":"Unknown API key."}');
  });
  await new Promise((resolve) => other.listen(0, "127.0.0.1", resolve));
  const taken = other.address().port;
  const built = await buildBinary();
  let server;
  try {
    let first = true;
    const pick = async () => (first ? ((first = false), taken) : freePort());
    server = await startQuiver(built.bin, "http://127.0.0.1:9", { freePort: pick });
    assert.notEqual(server.baseUrl, `http://127.0.0.1:${taken}`);
    const client = new AgentClient({ apiKey: server.apiKey, baseUrl: server.baseUrl, maxRetries: 0 });
    assert.deepEqual(await client.agents.list(), []);
  } finally {
    await server?.stop();
    built.cleanup();
    await new Promise((resolve) => other.close(resolve));
  }
});
