// The README's JavaScript examples, run in order as one ES module against a real server. Only the API
// key (the README's "qv_...") and the http-request tool's base URL (the README's https://api.example.com,
// here the local target server) differ; QUIVER_BASE_URL names the server. The module imports the package
// by name, from a scratch project whose node_modules/quiver-sdk is this package.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { AgentClient } from "quiver-sdk";
import { SDK_ROOT, startEnv } from "../test-support/harness.js";

const execFileP = promisify(execFile);

let ENV;
let dir;

before(async () => {
  ENV = await startEnv();
  dir = mkdtempSync(path.join(os.tmpdir(), "quiver-readme-js-"));
  mkdirSync(path.join(dir, "node_modules"));
  symlinkSync(SDK_ROOT, path.join(dir, "node_modules", "quiver-sdk"), "dir");
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
}, { timeout: 20 * 60_000 });

after(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  await ENV?.close();
});

test("every JavaScript example of the README runs", async () => {
  const readme = readFileSync(path.join(SDK_ROOT, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/^```javascript\n(.*?)^```/gms)].map((m) => m[1]);
  assert.equal(blocks.length, 4, "the quickstart, the idempotency pattern, the error and didNothing examples");
  let source = blocks.join("\n");
  assert.ok(source.includes('"qv_..."') && source.includes("https://api.example.com"));
  source = source.replaceAll('"qv_..."', JSON.stringify(ENV.apiKey)).replaceAll("https://api.example.com", ENV.target.url);
  // What the test checks afterwards: the idempotency pattern's tool and key.
  source += '\nconsole.log("PAYMENT", JSON.stringify({ tool: httpTool.id, key: idempotencyKey, payment }));\n';
  const file = path.join(dir, "readme.mjs");
  writeFileSync(file, source);
  const before = ENV.target.count("/payments");
  const pings = ENV.target.count("/ping");
  const { stdout } = await execFileP(process.execPath, [file], {
    cwd: dir,
    env: { ...process.env, QUIVER_BASE_URL: ENV.baseUrl },
    timeout: 60_000,
  });
  assert.match(stdout, /^tavily \(builtin\): Tavily Search$/m); // the quickstart's catalog listing
  assert.match(stdout, /^false \{\n\s+query: 'latest AI research papers'/m); // its call
  assert.match(stdout, /^422 validation_error \{ TAVILY_API_KEY: /m); // the error example
  const { tool, key, payment } = JSON.parse(stdout.match(/^PAYMENT (.*)$/m)[1]);
  assert.equal(payment.is_error, false, JSON.stringify(payment));
  assert.deepEqual(payment.result.body.echo, { amount: 100 });
  assert.equal(ENV.target.count("/payments"), before + 1);
  assert.equal(ENV.target.count("/ping"), pings + 1); // the didNothing example's call
  // Its comment: calling again with the same key replays, and the tool does not run again.
  const client = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl });
  const again = await client.tools.call(tool, { action: "post", arguments: { path: "/payments", body: { amount: 100 } }, idempotencyKey: key });
  assert.equal(again.replayed, true);
  assert.equal(ENV.target.count("/payments"), before + 1);
});
