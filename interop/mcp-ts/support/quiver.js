// A real `quiver serve` (embedded SQLite, loopback egress allowed) and a small client of its REST API. The
// server is started by the JavaScript SDK's test harness, so both suites start it the same way: QUIVER_BIN
// names a built binary, else it is built from this checkout. (Kept outside test/ so `node --test test/` does
// not run it as a test.)

import { buildBinary, startQuiver } from "../../../sdk/js/test-support/harness.js";

/** Starts Quiver; call close() in after(). */
export async function startQuiverEnv() {
  const built = await buildBinary();
  let server;
  try {
    // No test here uses Tavily: its base URL points at a closed port.
    server = await startQuiver(built.bin, "http://127.0.0.1:9");
  } catch (err) {
    built.cleanup();
    throw err;
  }
  const api = async (method, path, body, headers = {}) => {
    const res = await fetch(server.baseUrl + path, {
      method,
      headers: { "X-API-KEY": server.apiKey, ...(body !== undefined ? { "Content-Type": "application/json" } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: res.status, headers: res.headers, body: json, text };
  };
  return {
    baseUrl: server.baseUrl,
    apiKey: server.apiKey,
    api,
    logTail: server.logTail,
    /** Creates a custom-mcp tool and gives it `userResponse`; answers the provide-config response and the tool's ID. */
    async customMCP(userResponse, name) {
      const created = await api("POST", "/api/v1/agents/custom-tools/", { mcp_tool: "custom-mcp", ...(name ? { name } : {}) });
      if (created.status !== 201) throw new Error(`create custom-mcp: ${created.status} ${created.text}`);
      const id = created.body.id;
      const configured = await api("POST", `/api/v1/agents/custom-tools/${id}/provide-config/`, { user_response: userResponse });
      return { id, configured };
    },
    /** POST /call; `key` is the Idempotency-Key, if any. */
    call(tool, action, args, key) {
      return api("POST", "/api/v1/agents/custom-tools/call/", { tool, action, arguments: args }, key ? { "Idempotency-Key": key } : {});
    },
    close: async () => {
      await server.stop();
      built.cleanup();
    },
  };
}
