// Test fixtures: a real `quiver serve`, a fake Tavily, a target HTTP server, a connection-dropping
// proxy and a scripted fake server. (Kept outside test/ so `node --test test/` does not run it as a test.)

import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, openSync, closeSync, readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileP = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SDK_ROOT = path.resolve(HERE, "..");
export const REPO_ROOT = path.resolve(HERE, "..", "..", "..");

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function sendJSON(res, status, payload, headers = {}) {
  const raw = Buffer.from(JSON.stringify(payload));
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": raw.length, ...headers });
  res.end(raw);
}

async function listen(server, wanted = 0) {
  await new Promise((resolve) => server.listen(wanted, "127.0.0.1", resolve));
  const { port } = server.address();
  return { port, url: `http://127.0.0.1:${port}` };
}

function closer(server) {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    });
}

/** Tavily's POST /search and POST /extract; counts requests. */
export async function fakeTavily() {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    let body = {};
    try {
      body = JSON.parse(raw.toString() || "{}");
    } catch {}
    const auth = req.headers.authorization ?? "";
    const key = auth.startsWith("Bearer ") ? auth.slice(7) : String(body.api_key ?? "");
    requests.push({ path: req.url, body, auth });
    if (!key.startsWith("tvly-")) return sendJSON(res, 401, { detail: { error: "Unauthorized" } });
    const p = req.url.replace(/\/$/, "");
    if (p === "/search") {
      return sendJSON(res, 200, {
        query: body.query,
        answer: null,
        results: [
          { title: `Result about ${body.query}`, url: "https://example.com/1", content: "First.", score: 0.9 },
          { title: "Another", url: "https://example.com/2", content: "Second.", score: 0.5 },
        ],
        response_time: 0.01,
      });
    }
    if (p === "/extract") {
      return sendJSON(res, 200, { results: (body.urls ?? []).map((u) => ({ url: u, raw_content: "text" })), failed_results: [] });
    }
    sendJSON(res, 404, { detail: "not found" });
  });
  const { url } = await listen(server);
  return { url, requests, get count() { return requests.length; }, close: closer(server) };
}

/** Records every request; /slow... answers after slowMs; /fail... answers 500; /raw... answers its request body as JSON, byte for byte. */
export async function targetServer({ slowMs = 2000 } = {}) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    requests.push({ method: req.method, path: req.url, body: raw.toString(), headers: req.headers });
    const n = requests.filter((r) => r.path === req.url).length;
    if (req.url.startsWith("/slow")) await sleep(slowMs);
    if (req.url.startsWith("/fail")) return sendJSON(res, 500, { oops: true });
    if (req.url.startsWith("/raw")) {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": raw.length });
      return res.end(raw);
    }
    let echo = null;
    if (raw.length) {
      try {
        echo = JSON.parse(raw.toString());
      } catch {
        echo = raw.toString();
      }
    }
    sendJSON(res, 200, { ok: true, method: req.method, path: req.url, n, echo });
  });
  const { url } = await listen(server);
  return {
    url,
    slowMs,
    requests,
    count(p, method) {
      return requests.filter((r) => (p === undefined || r.path.split("?")[0] === p) && (method === undefined || r.method === method)).length;
    },
    close: closer(server),
  };
}

/**
 * Forwards to `upstream`; drop(method, pathContains, when) makes the next matching request be forwarded
 * and then its client connection closed without an answer: "after_response" waits for the upstream's full
 * answer (the call completed), "before_response" cuts right after the request was sent (upstream too).
 */
export async function dropProxy(upstream) {
  const up = new URL(upstream);
  const rules = [];
  const seen = [];
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    seen.push([req.method, req.url]);
    let when = null;
    for (const rule of rules) {
      if (rule.times > 0 && rule.method === req.method && req.url.includes(rule.path)) {
        rule.times--;
        when = rule.when;
        break;
      }
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    headers["content-length"] = String(raw.length);
    const upReq = http.request({ hostname: up.hostname, port: up.port, path: req.url, method: req.method, headers, agent: false });
    upReq.on("error", () => {});
    if (when === "before_response") {
      upReq.end(raw);
      await sleep(200);
      upReq.destroy();
      req.socket.destroy();
      return;
    }
    upReq.on("response", async (upRes) => {
      const body = await readBody(upRes);
      if (when === "after_response") {
        req.socket.destroy();
        return;
      }
      const out = {};
      for (const [k, v] of Object.entries(upRes.headers)) {
        if (!["transfer-encoding", "connection", "content-length", "keep-alive", "date"].includes(k)) out[k] = v;
      }
      out["content-length"] = body.length;
      res.writeHead(upRes.statusCode, out);
      res.end(body);
    });
    upReq.end(raw);
  });
  const { url } = await listen(server);
  return {
    url,
    drop(method, pathContains, when = "after_response", times = 1) {
      rules.push({ method, path: pathContains, when, times });
    },
    count(method, pathContains = "") {
      return seen.filter(([m, p]) => (method === undefined || m === method) && p.includes(pathContains)).length;
    },
    close: closer(server),
  };
}

/**
 * Answers from a queue of {status, body, headers} (body "DROP" cuts the connection); records requests.
 * `port` 0 (the default) takes a free one.
 */
export async function scriptedServer({ port = 0 } = {}) {
  const script = [];
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    requests.push({ method: req.method, path: req.url, headers: req.headers, body: raw.toString() });
    const step = script.shift() ?? { status: 200, body: {} };
    if (step.body === "DROP") {
      req.socket.destroy();
      return;
    }
    if (step.status === 204) {
      res.writeHead(204, step.headers ?? {});
      return res.end();
    }
    if (typeof step.body === "string") {
      res.writeHead(step.status, { "Content-Type": "text/html", ...(step.headers ?? {}) });
      return res.end(step.body);
    }
    sendJSON(res, step.status, step.body ?? {}, step.headers ?? {});
  });
  const { url } = await listen(server, port);
  return {
    url,
    requests,
    push(status, body, headers) {
      script.push({ status, body, headers });
    },
    close: closer(server),
  };
}

/**
 * Answers every request with `response` (raw HTTP bytes): `head` bytes at once, then `chunk` bytes every
 * `intervalMs`, so the status line and headers, the body, or both can trickle.
 */
export async function trickleServer({ response, head = 0, chunk = 1, intervalMs = 300 }) {
  const raw = Buffer.from(response);
  const sockets = new Set();
  const timers = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let seen = "";
    socket.on("data", (d) => {
      if (seen.includes("\r\n\r\n")) return;
      seen += d.toString("latin1");
      if (!seen.includes("\r\n\r\n")) return;
      socket.write(raw.subarray(0, head));
      let at = head;
      const timer = setInterval(() => {
        if (at >= raw.length || socket.destroyed) {
          clearInterval(timer);
          timers.delete(timer);
          return;
        }
        socket.write(raw.subarray(at, at + chunk));
        at += chunk;
      }, intervalMs);
      timers.add(timer);
    });
  });
  const { url } = await listen(server);
  return {
    url,
    close: () =>
      new Promise((resolve) => {
        for (const t of timers) clearInterval(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export async function buildBinary() {
  if (process.env.QUIVER_BIN) return { bin: process.env.QUIVER_BIN, cleanup: () => {} };
  const dir = mkdtempSync(path.join(os.tmpdir(), "quiver-bin-"));
  const bin = path.join(dir, "quiver");
  try {
    await execFileP("go", ["build", "-o", bin, "./cmd/quiver"], { cwd: REPO_ROOT, maxBuffer: 1 << 24, timeout: 1_200_000 });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`go build ./cmd/quiver failed in ${REPO_ROOT}:\n${String(err.stderr ?? err).slice(-4000)}`);
  }
  return { bin, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A `quiver serve` on a free port with its own data dir and two accounts' keys. `beforeServe(dataDir)`, if
 * given, runs once the database exists (made by `quiver keys create`) and before the server starts.
 * `freePort`, if given, replaces the function that picks each port tried (a test's).
 */
export async function startQuiver(bin, tavilyUrl, options = {}) {
  const { beforeServe } = options;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "quiver-sdk-js-"));
  const env = {
    ...process.env,
    QUIVER_DATA_DIR: dataDir,
    QUIVER_ADDR: "127.0.0.1:0", // set to the chosen port before `serve`
    QUIVER_EGRESS_ALLOW_PRIVATE: "true",
    QUIVER_TAVILY_BASE_URL: tavilyUrl,
  };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const createKey = async (account) => {
    const { stdout } = await execFileP(bin, ["keys", "create", "--account", account], { env, timeout: 120_000 });
    const lines = stdout.split("\n").map((l) => l.trim()).filter(Boolean);
    if (!lines.length) throw new Error("quiver keys create printed no key");
    return lines.at(-1);
  };
  const apiKey = await createKey("sdk-test");
  const otherApiKey = await createKey("sdk-other");
  if (beforeServe) await beforeServe(dataDir);
  const logPath = path.join(dataDir, "server.log");
  const logTail = () => {
    try {
      return readFileSync(logPath, "utf8").slice(-4000);
    } catch {
      return "";
    }
  };
  // A port from freePort() can be taken by someone else before the server binds it: retry on a new one. It
  // is chosen just before the server starts, to keep that window short.
  for (let attempt = 1; ; attempt++) {
    const port = await (options.freePort ?? freePort)();
    env.QUIVER_ADDR = `127.0.0.1:${port}`;
    const logFd = openSync(logPath, "w");
    const proc = spawn(bin, ["serve"], { env, stdio: ["ignore", logFd, logFd] });
    let exited = null;
    const exitedP = new Promise((r) =>
      proc.once("exit", (code) => {
        exited = code ?? -1;
        r();
      }),
    );
    const baseUrl = `http://127.0.0.1:${port}`;
    const stop = async () => {
      if (exited === null) {
        proc.kill("SIGTERM");
        const t = setTimeout(() => proc.kill("SIGKILL"), 10_000);
        await exitedP;
        clearTimeout(t);
      }
      try {
        closeSync(logFd);
      } catch {}
    };
    const deadline = Date.now() + 30_000;
    let failure = null;
    for (;;) {
      if (exited !== null) {
        failure = `quiver serve exited with ${exited}`;
        break;
      }
      try {
        // Our key proves it is this server: another one (a quiver serve of another test) may have taken the
        // port first, and this one will exit (then retried on another port).
        const res = await fetch(baseUrl + "/api/v1/agents/", { headers: { "X-API-KEY": apiKey }, signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        if (res.status === 200) break;
      } catch {}
      if (Date.now() > deadline) {
        failure = "quiver serve not healthy within 30s";
        break;
      }
      await sleep(200);
    }
    if (failure === null) {
      const stopAll = async () => {
        await stop();
        rmSync(dataDir, { recursive: true, force: true });
      };
      return { baseUrl, apiKey, otherApiKey, stop: stopAll, logTail };
    }
    const tail = logTail();
    await stop();
    if (attempt >= 3) {
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(`${failure}:\n${tail}`);
    }
  }
}

/** Everything an integration test file needs; call close() in after(). `options` go to startQuiver. */
export async function startEnv(options = {}) {
  const tavily = await fakeTavily();
  const target = await targetServer();
  let built = null;
  let server;
  try {
    built = await buildBinary();
    server = await startQuiver(built.bin, tavily.url, options);
  } catch (err) {
    await tavily.close();
    await target.close();
    built?.cleanup();
    throw err;
  }
  return {
    tavily,
    target,
    baseUrl: server.baseUrl,
    apiKey: server.apiKey,
    otherApiKey: server.otherApiKey,
    server,
    proxy: () => dropProxy(server.baseUrl),
    async close() {
      await server.stop();
      await tavily.close();
      await target.close();
      built.cleanup();
    },
  };
}
