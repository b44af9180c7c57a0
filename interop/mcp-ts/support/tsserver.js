// A real MCP server built on the official TypeScript SDK (McpServer and StreamableHTTPServerTransport on
// Node's own http server), for Quiver to connect to as a custom-mcp tool. (Kept outside test/ so
// `node --test test/` does not run it as a test.)

import http from "node:http";
import { randomUUID } from "node:crypto";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";

// buildServer registers the tools every mode serves, but those named in `gone`; `counts` records how many
// times each side effect ran.
function buildServer(counts, gone = new Set()) {
  const server = new McpServer({ name: "interop-ts", version: "1.0.0" }, { capabilities: { logging: {} } });
  const registerTool = server.registerTool.bind(server);
  server.registerTool = (name, ...rest) => (gone.has(name) ? undefined : registerTool(name, ...rest));
  server.registerTool(
    "lookup",
    {
      description: "Looks a word up (read-only).",
      inputSchema: { word: z.string().describe("the word") },
      annotations: { readOnlyHint: true },
    },
    async ({ word }) => {
      counts.lookup = (counts.lookup ?? 0) + 1;
      return { content: [{ type: "text", text: JSON.stringify({ word, length: word.length }) }] };
    },
  );
  server.registerTool(
    "set_flag",
    {
      description: "Sets a flag (idempotent).",
      inputSchema: { name: z.string(), value: z.boolean() },
      annotations: { idempotentHint: true, destructiveHint: false },
    },
    async ({ name, value }) => ({ content: [{ type: "text", text: JSON.stringify({ name, value }) }] }),
  );
  server.registerTool(
    "create_order",
    {
      description: "Creates an order: a side effect, not retryable.",
      inputSchema: { item: z.string(), quantity: z.number().int().min(1).optional() },
      annotations: { destructiveHint: false },
    },
    async ({ item, quantity }) => {
      counts.create_order = (counts.create_order ?? 0) + 1;
      const order = { order: counts.create_order, item, quantity: quantity ?? 1 };
      return { content: [{ type: "text", text: JSON.stringify(order) }] };
    },
  );
  server.registerTool(
    "stats",
    {
      description: "Counts the calls so far (typed output).",
      inputSchema: {},
      outputSchema: { lookups: z.number().int(), orders: z.number().int() },
      annotations: { readOnlyHint: true },
    },
    async () => {
      const out = { lookups: counts.lookup ?? 0, orders: counts.create_order ?? 0 };
      return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
    },
  );
  server.registerTool(
    "chatty",
    {
      description: "Sends a log message and progress before its answer, pausing pauseMs between steps.",
      inputSchema: { steps: z.number().int().min(1).max(5), pauseMs: z.number().int().min(0).max(1000).optional() },
      annotations: { readOnlyHint: true },
    },
    async ({ steps, pauseMs }, extra) => {
      for (let i = 1; i <= steps; i++) {
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
        await server.sendLoggingMessage({ level: "info", data: `step ${i}` }, extra.sessionId).catch(() => {});
        const token = extra._meta?.progressToken;
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: steps } });
        }
      }
      return { content: [{ type: "text", text: JSON.stringify({ steps }) }] };
    },
  );
  server.registerTool(
    "handoff",
    {
      description: "Closes its SSE stream (when the server can resume one) before its answer: a side effect, not retryable.",
      inputSchema: { item: z.string(), pauseMs: z.number().int().min(0).max(2000).optional() },
    },
    async ({ item, pauseMs }, extra) => {
      counts.handoff = (counts.handoff ?? 0) + 1;
      extra.closeSSEStream?.();
      await new Promise((r) => setTimeout(r, pauseMs ?? 100));
      return { content: [{ type: "text", text: JSON.stringify({ item, n: counts.handoff, closed: Boolean(extra.closeSSEStream) }) }] };
    },
  );
  server.registerTool(
    "refuse",
    { description: "Always reports a tool error.", inputSchema: { why: z.string() }, annotations: { readOnlyHint: true } },
    async ({ why }) => ({ isError: true, content: [{ type: "text", text: `refused: ${why}` }] }),
  );
  server.registerTool(
    "explode",
    { description: "Always throws.", inputSchema: {}, annotations: { readOnlyHint: true } },
    async () => {
      throw new Error("kaboom from the TypeScript server");
    },
  );
  return server;
}

function readJSON(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString();
      try {
        resolve(raw ? JSON.parse(raw) : undefined);
      } catch (err) {
        reject(err);
      }
    });
    req.on("error", reject);
  });
}

/**
 * Starts a TypeScript-SDK MCP server at /mcp. `stateful` gives each client a session (sessionIdGenerator),
 * else every POST gets a fresh server and transport (the SDK's stateless pattern); `json` answers with
 * application/json (enableJsonResponse) instead of an SSE stream; `token`, if set, is the bearer token it
 * demands (401 otherwise); `keepAliveTimeout` is Node's idle keep-alive timeout in ms; `checkHost` turns on
 * the SDK's DNS-rebinding protection, allowing only the Host header 127.0.0.1:{port}; `resumable` gives a
 * stateful server an event store, so each SSE stream opens with a priming event (an ID, empty data).
 */
export async function startTSServer({ stateful = true, json = false, token = "", keepAliveTimeout, checkHost = false, resumable = false } = {}) {
  const counts = {};
  const gone = new Set(); // tools a server built from now on no longer has
  let port = 0;
  // The SDK's DNS-rebinding protection, when asked for: a request whose Host is not ours gets 403.
  const hostCheck = () => (checkHost ? { enableDnsRebindingProtection: true, allowedHosts: [`127.0.0.1:${port}`] } : {});
  const requests = [];
  const sessions = new Map(); // session ID → transport
  const sockets = new Set();
  let connections = 0;

  async function handle(req, res) {
    const url = new URL(req.url, "http://x");
    requests.push({ method: req.method, path: url.pathname, session: req.headers["mcp-session-id"], auth: req.headers.authorization, lastEventId: req.headers["last-event-id"], socket: req.socket });
    if (url.pathname !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { "Content-Type": "application/json", "WWW-Authenticate": 'Bearer error="invalid_token"' });
      res.end(JSON.stringify({ error: "invalid_token" }));
      return;
    }
    const body = req.method === "POST" ? await readJSON(req) : undefined;
    requests.at(-1).rpc = body?.method;
    if (!stateful) {
      if (req.method !== "POST") {
        res.writeHead(405, { Allow: "POST" }).end();
        return;
      }
      const server = buildServer(counts, gone);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json, ...hostCheck() });
      res.on("close", () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      if (sid || req.method !== "POST" || body?.method !== "initialize") {
        res.writeHead(sid ? 404 : 400, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: sid ? "Session not found" : "No session" }, id: null }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: json,
        ...hostCheck(),
        ...(resumable ? { eventStore: new InMemoryEventStore() } : {}),
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await buildServer(counts, gone).connect(transport);
    }
    await transport.handleRequest(req, res, body);
  }

  const httpServer = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(String(err));
    });
  });
  if (keepAliveTimeout !== undefined) httpServer.keepAliveTimeout = keepAliveTimeout;
  httpServer.on("connection", (s) => {
    connections++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  port = httpServer.address().port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    counts,
    requests,
    sessions,
    gone,
    /** Changes the bearer token the server demands from now on ("" for none). */
    setToken(t) {
      token = t;
    },
    /** How many TCP connections the server has accepted so far. */
    get connections() {
      return connections;
    },
    /** How many of them are open now. */
    get openSockets() {
      return sockets.size;
    },
    close: () =>
      new Promise((resolve) => {
        for (const t of sessions.values()) t.close().catch(() => {});
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
