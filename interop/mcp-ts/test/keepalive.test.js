// Quiver's pooled connections to a TypeScript-SDK MCP server on Node's http server, which closes an idle
// keep-alive connection once its keepAliveTimeout (5 s by default; 1 s here, to be quick) has run out: a
// call after that must go out on a fresh connection and succeed, never become tool_outcome_unknown.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { startQuiverEnv } from "../support/quiver.js";
import { startTSServer } from "../support/tsserver.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, cond, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

let q;
before(async () => {
  q = await startQuiverEnv();
});
after(async () => {
  await q?.close();
});

const modes = [
  { name: "stateful, SSE", stateful: true, json: false },
  { name: "stateless, JSON responses", stateful: false, json: true },
];

for (const mode of modes) {
  describe(`a call after Node's keep-alive timeout closed the idle connection (${mode.name})`, () => {
    let ts;
    let tool;
    before(async () => {
      ts = await startTSServer({ ...mode, keepAliveTimeout: 1000 });
      const { id, configured } = await q.customMCP({ url: ts.url });
      assert.equal(configured.status, 200, configured.text);
      tool = id;
    });
    after(async () => {
      await ts?.close();
    });

    // callSockets are the sockets the server read its tools/calls on, in order.
    const callSockets = () => ts.requests.filter((r) => r.rpc === "tools/call").map((r) => r.socket);

    test("still succeeds, for a non-retryable and a retryable action", async () => {
      for (const word of ["one", "two"]) {
        const r = await q.call(tool, "lookup", { word });
        assert.equal(r.status, 200, r.text);
      }
      const [a, b] = callSockets();
      assert.equal(a, b, "back-to-back calls did not share a pooled connection");

      await until("Node to close the idle keep-alive connection", () => b.destroyed);
      const key = `after-idle-${mode.stateful}-${mode.json}-${Date.now()}`;
      const order = await q.call(tool, "create_order", { item: "late" }, key);
      assert.equal(order.status, 200, order.text);
      assert.equal(order.body.is_error, false);
      assert.deepEqual(order.body.result, { order: 1, item: "late", quantity: 1 });
      assert.notEqual(callSockets().at(-1), b);

      await until("Node to close the idle keep-alive connection", () => callSockets().at(-1).destroyed);
      const read = await q.call(tool, "lookup", { word: "idle" });
      assert.equal(read.status, 200, read.text);
      assert.equal(ts.counts.create_order, 1);

      // Discovery (the Go SDK's client, not the fast path) over connections Node has closed too.
      const actions = await q.api("GET", `/api/v1/agents/custom-tools/${tool}/actions/`);
      assert.equal(actions.status, 200, actions.text);
    });
  });
}

// Node keeps an idle connection for keepAliveTimeout (plus its own second of grace) and an event stream's
// answer does not say for how long (no Keep-Alive header), so a call that comes just as the timer fires is
// written into a connection Node is closing: lost unrun, its outcome unknown. Once Quiver has seen the server
// close an idle connection it reuses none idle that long again, so calls at that spacing all succeed.
describe("calls just as Node's keep-alive timer fires, once Quiver has seen it close one", () => {
  const servers = [];
  before(async () => {
    for (let i = 0; i < 6; i++) {
      const ts = await startTSServer({ stateful: false, json: false, keepAliveTimeout: 1000 });
      const { id, configured } = await q.customMCP({ url: ts.url });
      assert.equal(configured.status, 200, configured.text);
      servers.push({ ts, tool: id });
    }
  });
  after(async () => {
    for (const { ts } of servers) await ts.close();
  });

  test("succeed, each run once", async () => {
    await Promise.all(
      servers.map(async ({ ts, tool }, j) => {
        const lastCall = () => ts.requests.filter((r) => r.rpc === "tools/call").at(-1).socket;
        // How long Node keeps the idle connection, as seen from the server's side.
        assert.equal((await q.call(tool, "lookup", { word: "warm" })).status, 200);
        const sock = lastCall();
        const t0 = Date.now();
        await until("Node to close the idle keep-alive connection", () => sock.destroyed);
        const keeps = Date.now() - t0;
        assert.equal((await q.call(tool, "lookup", { word: "seen" })).status, 200);
        for (let i = 0; i < 4; i++) {
          await sleep(Math.max(0, keeps - 12 + ((i * 6 + j) % 14)));
          const r = await q.call(tool, "create_order", { item: `edge${j}-${i}` }, `edge-${j}-${i}-${Date.now()}`);
          assert.equal(r.status, 200, `server ${j}, call ${i}, idle ~${keeps} ms: ${r.text}`);
        }
        assert.equal(ts.counts.create_order, 4);
      }),
    );
  });
});
