// Integers beyond Number.MAX_SAFE_INTEGER against a real `quiver serve`. API.md makes IDs int64, and a
// tool's result is the tool's JSON, numbers included; a JavaScript number is exact only up to 2^53 - 1.
// This server's database hands out IDs from 2^53 + 1 on (its ID sequences are set before it starts, as a
// long-lived database's would have grown), so JSON.parse would read tool 9007199254740993 as 9007199254740992.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { startEnv } from "../test-support/harness.js";

const execFileP = promisify(execFile);

const FIRST_ID = 2n ** 53n + 1n; // 9007199254740993: the number 9007199254740992 in a double

/** Make the embedded database's next tool and agent IDs FIRST_ID (Python's sqlite3: Node 20 has none). */
async function bigSequences(dataDir) {
  const script = [
    "import sqlite3, sys",
    "db = sqlite3.connect(sys.argv[1])",
    "db.executemany('INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES (?, ?)', [('tools', int(sys.argv[2])), ('agents', int(sys.argv[2]))])",
    "db.commit()",
  ].join("\n");
  await execFileP("python3", ["-c", script, path.join(dataDir, "quiver.db"), String(FIRST_ID - 1n)]);
}

let ENV;
let client;

before(async () => {
  ENV = await startEnv({ beforeServe: bigSequences });
  client = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 30_000 });
}, { timeout: 20 * 60_000 });

after(async () => {
  await ENV?.close();
});

test("IDs beyond 2^53 are exact BigInts, and every call with one reaches that very tool or agent", async () => {
  const first = await client.tools.create({ mcpTool: "browser", name: "first" });
  const second = await client.tools.create({ mcpTool: "browser", name: "second" });
  assert.equal(first.id, FIRST_ID);
  assert.equal(second.id, FIRST_ID + 1n);

  const listed = await client.tools.list();
  assert.deepEqual(listed.map((t) => [t.id, t.name]), [[FIRST_ID, "first"], [FIRST_ID + 1n, "second"]]);
  assert.equal((await client.tools.listPage({ limit: 1 })).items[0].id, FIRST_ID);
  assert.equal((await client.tools.get(first.id)).name, "first");
  assert.equal((await client.tools.get(first)).name, "first");

  const k = `big-${randomUUID()}`;
  const res = await client.tools.call(first, {
    action: "fetch_page",
    arguments: { url: ENV.target.url + "/page" },
    idempotencyKey: k,
  });
  assert.equal(res.isError, false, JSON.stringify(res));
  assert.equal(res.tool, FIRST_ID);
  assert.equal((await client.idempotencyKeys.get(k)).tool, FIRST_ID);
  const byId = await client.tools.call(first.id, { action: "fetch_page", arguments: { url: ENV.target.url + "/page" } });
  assert.equal(byId.tool, FIRST_ID);

  const agent = await client.agents.create({ name: "big", tools: [first, second.id] });
  assert.equal(agent.id, FIRST_ID);
  assert.deepEqual(agent.tools, [FIRST_ID, FIRST_ID + 1n]);
  const updated = await client.agents.update(agent.id, { tools: [first.id] });
  assert.deepEqual(updated.tools, [FIRST_ID]);
  assert.deepEqual((await client.agents.get(agent)).tools, [FIRST_ID]);
  assert.equal((await client.agents.list()).find((a) => a.name === "big").id, FIRST_ID);

  // JSON.stringify cannot write a BigInt: a returned object gives it as its decimal string.
  assert.equal(JSON.parse(JSON.stringify(updated)).id, String(FIRST_ID));
  assert.deepEqual(JSON.parse(JSON.stringify(updated)).tools, [String(FIRST_ID)]);

  // The delete reaches the tool named, not its neighbour.
  await client.tools.delete(first.id);
  await assert.rejects(client.tools.get(first.id), quiver.NotFoundError);
  assert.equal((await client.tools.get(second.id)).name, "second");
});

test("an ID beyond 2^53 given as a number is refused before anything is sent", async () => {
  const before = (await client.tools.list()).length;
  for (const send of [
    () => client.tools.get(9007199254740993),
    () => client.tools.delete(9007199254740993),
    () => client.tools.call(9007199254740993, { action: "fetch_page", arguments: { url: "x" } }),
    () => client.agents.create({ name: "n", tools: [9007199254740993] }),
  ]) {
    await assert.rejects(async () => send(), (err) => err instanceof TypeError && /BigInt/.test(err.message));
  }
  assert.equal((await client.tools.list()).length, before);
  assert.equal((await client.agents.list()).filter((a) => a.name === "n").length, 0);
});

test("big integers in arguments and in a tool's result are exact", async () => {
  let http = await client.tools.create({ mcpTool: "http-request" });
  http = await client.tools.provideConfig(http.id, { userResponse: { base_url: ENV.target.url } });
  http = await client.tools.provideConfig(http.id, { userResponse: { auth_type: "none" } });
  const body = { n: 12345678901234567890123n, m: -(2n ** 63n), small: 7, f: 0.5, s: "12345678901234567890" };
  const res = await client.tools.call(http, { action: "put", arguments: { path: "/raw-big", body } });
  assert.equal(res.isError, false, JSON.stringify(res));
  // What the tool's server got, and what came back: the same integers, digit for digit.
  const sent = ENV.target.requests.filter((r) => r.path === "/raw-big").at(-1).body;
  assert.match(sent, /"n":12345678901234567890123[,}]/);
  assert.match(sent, /"m":-9223372036854775808[,}]/);
  assert.deepEqual(res.result.body, body);
});
