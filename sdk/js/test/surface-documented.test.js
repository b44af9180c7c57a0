// The README's surface against the package's: every export and public method is documented, every
// documented call exists, and index.d.ts declares every export. No server needed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";

import * as quiver from "quiver-sdk";
import { SDK_ROOT } from "../test-support/harness.js";

const README = readFileSync(path.join(SDK_ROOT, "README.md"), "utf8");
const DTS = readFileSync(path.join(SDK_ROOT, "index.d.ts"), "utf8");
const RESOURCES = { tools: quiver.ToolsResource, agents: quiver.AgentsResource, idempotencyKeys: quiver.IdempotencyKeysResource };
const escape = (s) => s.replace(/[$]/g, "\\$");

const publicMembers = (Cls) =>
  Object.getOwnPropertyNames(Cls.prototype).filter((n) => n !== "constructor" && !n.startsWith("_"));

test("every export is named in the README and declared in index.d.ts", () => {
  const undocumented = Object.keys(quiver).filter((n) => !new RegExp("`[^`]*\\b" + escape(n) + "\\b[^`]*`").test(README));
  assert.deepEqual(undocumented, [], "exported but not named in README.md");
  const undeclared = Object.keys(quiver).filter(
    (n) => !new RegExp(`^export (?:class|function|const) ${escape(n)}\\b`, "m").test(DTS),
  );
  assert.deepEqual(undeclared, [], "exported but not declared in index.d.ts");
});

test("every public method and getter is named in the README", () => {
  const missing = [];
  for (const Cls of [quiver.Page, quiver.QuiverObject, quiver.QuiverError, ...Object.values(RESOURCES)]) {
    for (const n of publicMembers(Cls)) if (!new RegExp("\\." + escape(n) + "\\b").test(README)) missing.push(`${Cls.name}.${n}`);
  }
  assert.deepEqual(missing, []);
});

test("every call the README documents exists", () => {
  const calls = [...README.matchAll(/\b(tools|agents|idempotencyKeys)\.(\w+)\(/g)];
  assert.ok(calls.length > 20);
  for (const [, resource, method] of calls) {
    assert.equal(typeof RESOURCES[resource].prototype[method], "function", `${resource}.${method}`);
  }
});
