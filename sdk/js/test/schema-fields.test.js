// The returned objects' declared fields (index.d.ts) against the server's own OpenAPI document. Every field
// the server's schema marks required is in every answer, so the class it is returned as declares it, and,
// for a snake_case name, the camelCase alias the SDK gives it at run time (tool.updatedAt).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";

import { AgentClient } from "quiver-sdk";
import { SDK_ROOT, startEnv } from "../test-support/harness.js";

const CLASSES = [
  "Tool",
  "Agent",
  "Action",
  "AvailableTool",
  "ConfigurationStep",
  "CallResult",
  "CallLogEntry",
  "IdempotencyKeyState",
];

let ENV;

before(async () => {
  ENV = await startEnv();
}, { timeout: 20 * 60_000 });

after(async () => {
  await ENV?.close();
});

const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/** The member names each class of index.d.ts declares (its own body only). */
function declaredMembers(dts, name) {
  const m = dts.match(new RegExp(`^export class ${name}\\b[^{]*\\{\\n(.*?)^\\}`, "ms"));
  assert.ok(m, `index.d.ts has no class ${name}`);
  return new Set([...m[1].matchAll(/^\s+(?:readonly\s+)?([A-Za-z_$][\w$]*)\??:/gm)].map((x) => x[1]));
}

test("every field the server's schema requires is declared, with its camelCase alias", async () => {
  const schemas = (await (await fetch(ENV.baseUrl + "/openapi.json")).json()).components.schemas;
  const dts = readFileSync(path.join(SDK_ROOT, "index.d.ts"), "utf8");
  const missing = [];
  for (const name of CLASSES) {
    const declared = declaredMembers(dts, name);
    for (const field of schemas[name].required ?? []) {
      if (!declared.has(field)) missing.push(`${name}.${field}`);
      if (camel(field) !== field && !declared.has(camel(field))) missing.push(`${name}.${camel(field)}`);
    }
  }
  assert.deepEqual(missing, []);
});

test("every field the server's schema has is declared", async () => {
  const schemas = (await (await fetch(ENV.baseUrl + "/openapi.json")).json()).components.schemas;
  Object.assign(schemas.AvailableTool.properties, schemas.CatalogEntry.properties);
  const dts = readFileSync(path.join(SDK_ROOT, "index.d.ts"), "utf8");
  const missing = [];
  for (const name of CLASSES) {
    const declared = declaredMembers(dts, name);
    for (const field of Object.keys(schemas[name].properties)) if (!declared.has(field)) missing.push(`${name}.${field}`);
  }
  assert.deepEqual(missing, []);
});

test("a tool has them at run time", async () => {
  const client = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 30_000 });
  const tool = await client.tools.create({ mcpTool: "browser" });
  assert.equal(tool.type, "builtin");
  assert.equal(typeof tool.updated_at, "string");
  assert.equal(tool.updatedAt, tool.updated_at);
});
