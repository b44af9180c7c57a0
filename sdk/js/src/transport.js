// HTTP transport: global fetch, JSON, typed errors, and retries that cannot duplicate work.

import {
  APIConnectionError,
  APITimeoutError,
  EARLIER_ATTEMPT_MAY_HAVE_RUN,
  InvalidIdempotencyKeyError,
  InvalidRequestError,
  QuiverError,
  bodySnippet,
  errorFromResponse,
} from "./errors.js";
import { parseJSON, stringifyJSON } from "./json.js";

export const VERSION = "0.1.0";

/**
 * SAFE: repeating the request cannot duplicate an effect (GET, DELETE, or a tool call carrying the
 * caller's idempotency key). Retried on connection errors, timeouts, 5xx (except the terminal
 * tool_outcome_unknown and the deterministic upstream_auth_failed and upstream_refused), 429 and 409
 * request_in_progress, with or without Quiver's error code.
 * REFUSED_ONLY: repeating it could duplicate an effect (POST without a key, PATCH). Retried only when it
 * provably did nothing (QuiverError#didNothing) for a reason that passes: a refused connection (nothing was
 * sent), Quiver's 429 rate_limited and 503 unavailable. An answer without Quiver's code (a proxy's HTML 503 "upstream reset
 * before headers", a gateway's 502/504 or 429) proves nothing about what happened upstream, so it is never
 * retried for these.
 *
 * A DELETE retried after an attempt that may have run unseen (one whose error's didNothing is false: a cut
 * connection, a timeout, a 5xx other than Quiver's own word that nothing was done) takes a later 404
 * not_found as success: that attempt deleted it. An error thrown after such an attempt says didNothing
 * false whatever its own answer says.
 */
export const SAFE = "safe";
export const REFUSED_ONLY = "refused_only";

/** A server's Retry-After up to this is honoured (per retry); a longer one gives up at once. */
const MAX_RETRY_AFTER_SECONDS = 60;
/** The largest timeout setTimeout can keep (a longer one would fire at once). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
/**
 * Node's fetch (undici) gives up by itself after 300 s without response headers, or between two chunks of a
 * body (its headersTimeout and bodyTimeout), whatever the signal says. An attempt allowed longer than that is
 * sent with node:http, which has no deadline of its own: the SDK's timeout is the one that holds.
 */
const FETCH_OWN_TIMEOUT_MS = 300_000;
/**
 * undici's error codes for its own timeouts: waiting for headers or body chunks (see FETCH_OWN_TIMEOUT_MS), and
 * connecting (10 s by default, for the TCP connect and, over https, the TLS handshake). Each is APITimeoutError.
 */
const FETCH_TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

// What an HTTP header can carry: a token as its name; Latin-1 text without NUL, CR or LF as its value.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_HEADER_CHAR = /[^\u0001-\u0009\u000b\u000c\u000e-\u00ff]/;

/**
 * Throw InvalidRequestError, before anything is sent, for a header HTTP cannot carry. The message names
 * the header, never its value (it may be a secret).
 */
function checkHeaders(headers) {
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) {
      throw new InvalidRequestError(`Invalid header name ${JSON.stringify(name)}: it must be an HTTP token. Nothing was sent.`);
    }
    if (value === null || value === undefined) {
      throw new InvalidRequestError(`The ${name} header has no value (${value}). Nothing was sent.`);
    }
    const text = String(value);
    const bad = BAD_HEADER_CHAR.exec(text);
    if (bad) {
      const code = bad[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
      const what = name.toLowerCase() === "x-api-key" ? "the API key" : "its value";
      throw new InvalidRequestError(
        `The ${name} header cannot be sent: ${what} has the character U+${code} at index ${bad.index}, and HTTP ` +
          "header values can only be Latin-1 characters without NUL, CR or LF. Nothing was sent.",
      );
    }
  }
}

/**
 * Set a header, replacing any of the same name in another case (HTTP names are case-insensitive, and
 * fetch would join "x-api-key" and "X-API-KEY" into one value "a, b").
 */
function setHeader(headers, name, value) {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name.toLowerCase()) delete headers[key];
  headers[name] = value;
}

/** A timeout in milliseconds: a number > 0 that setTimeout can keep. Throws RangeError otherwise. */
function checkTimeout(ms) {
  if (typeof ms !== "number" || !(ms > 0 && ms <= MAX_TIMEOUT_MS)) {
    throw new RangeError(`timeout must be a number of milliseconds > 0 and <= ${MAX_TIMEOUT_MS}, not ${String(ms)}`);
  }
  return ms;
}

/**
 * The base URL without trailing slashes; InvalidRequestError unless it is an http(s) URL with a host, a
 * valid port, and no credentials, query or fragment. The message never shows a URL with an "@" in it: it
 * may carry a password, even one the URL parser refused.
 */
function checkBaseUrl(baseUrl) {
  const text = String(baseUrl).replace(/\/+$/, "");
  let url = null;
  try {
    url = new URL(text);
  } catch {
    // refused below
  }
  const problem =
    !url ? "it is not a URL"
    : !/^https?:$/.test(url.protocol) ? "it must start with http:// or https://"
    : !url.hostname ? "it has no host"
    : url.port === "0" ? "its port must be 1-65535"
    : url.username || url.password ? "it must not carry credentials (use apiKey)"
    : url.search || url.hash || /[?#]/.test(text) ? "it must not have a query or fragment"
    : null;
  if (problem) {
    const shown = String(baseUrl).includes("@") ? "" : ` ${JSON.stringify(text)}`; // never a password
    throw new InvalidRequestError(`Invalid baseUrl${shown}: ${problem}.`);
  }
  return text;
}

/** Half of a UTF-16 surrogate pair without its other half. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What a value is, when JSON.stringify would write it as other data than it holds (a Set as {}); else null. */
function silentlyChanged(value) {
  if (value === null || typeof value !== "object") return null;
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  const keyed = value instanceof Map || value instanceof Set || value instanceof WeakMap || value instanceof WeakSet;
  const binary = ArrayBuffer.isView(value) || value instanceof ArrayBuffer || tag === "SharedArrayBuffer";
  return keyed || binary || value instanceof RegExp ? `a ${tag}` : null;
}

/**
 * The JSON text of a request body. InvalidRequestError for what JSON cannot carry as given, which
 * JSON.stringify would change silently (NaN and ±Infinity become null, so would undefined in an array;
 * functions and symbols vanish) or refuse with a TypeError (a circular structure). An undefined object
 * member is left out, as usual. A BigInt is written as its exact integer literal (an int64 ID beyond
 * Number.MAX_SAFE_INTEGER, which the SDK reads as a BigInt, goes back as it came). A string or member name
 * with a lone surrogate (half of a UTF-16 pair, "\ud800") is no Unicode text: JSON.stringify would escape
 * it, the server would refuse the body as invalid_json; it is InvalidRequestError here, as in the Python SDK.
 */
function encodeBody(body) {
  const refuse = (key, what) => {
    throw new InvalidRequestError(`The request body cannot be sent: ${JSON.stringify(key)} is ${what}, which JSON cannot carry. Nothing was sent.`);
  };
  const checkText = (text) => {
    const lone = LONE_SURROGATE.exec(text);
    if (lone) {
      const code = lone[0].charCodeAt(0).toString(16).toUpperCase();
      throw new InvalidRequestError(
        `The request body cannot be sent: a string in it has U+${code}, a lone surrogate, which is not Unicode text ` +
          "and has no UTF-8 encoding. Nothing was sent.",
      );
    }
  };
  try {
    return stringifyJSON(body, function (key, value) {
      checkText(key);
      if (typeof value === "string") checkText(value);
      if (typeof value === "number" && !Number.isFinite(value)) refuse(key, String(value));
      if (typeof value === "function" || typeof value === "symbol") refuse(key, `a ${typeof value}`);
      if (value === undefined && Array.isArray(this)) refuse(key, "undefined (in an array)");
      // JSON.stringify would write these as {} or an object of indices: other input than was given.
      const silent = silentlyChanged(value);
      if (silent) refuse(key, silent);
      return value;
    });
  } catch (err) {
    if (err instanceof InvalidRequestError) throw err;
    throw new InvalidRequestError(`The request body cannot be encoded as JSON (${err.message}). Nothing was sent.`, { cause: err });
  }
}

/**
 * fetch parses the URL (WHATWG) and so resolves "." and ".." path segments, even written %2E: GET
 * /api/v1/idempotency-keys/.. would be sent as GET /api/v1/. Such a URL is sent with node:http instead,
 * which sends the path as given (the server accepts it).
 */
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?=[/?#]|$)/i;

/** The path and query of an absolute URL, exactly as written. */
function requestTarget(url) {
  const rest = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, "");
  return rest.startsWith("/") ? rest : "/" + rest;
}

/**
 * Check an idempotency key client-side; returns it unchanged.
 * Throws TypeError when it is not a string, InvalidIdempotencyKeyError when it is not 1–255 printable
 * ASCII characters (0x20–0x7E) without a leading or trailing space.
 * @param {unknown} key
 * @returns {string}
 */
export function validateIdempotencyKey(key) {
  if (typeof key !== "string") {
    throw new TypeError(`idempotencyKey must be a string, not ${key === null ? "null" : typeof key}`);
  }
  let problem = null;
  if (key.length < 1 || key.length > 255) problem = "must be 1-255 characters long";
  else if (!/^[\x20-\x7e]+$/.test(key)) problem = "must contain only printable ASCII characters (0x20-0x7E)";
  else if (key.startsWith(" ") || key.endsWith(" ")) problem = "must not start or end with a space";
  if (problem) {
    throw new InvalidIdempotencyKeyError(`Invalid idempotency key: it ${problem}.`, {
      code: "invalid_idempotency_key",
    });
  }
  return key;
}

function nodeVersion() {
  return typeof process !== "undefined" && process.versions?.node ? `Node ${process.versions.node}` : "JS";
}

export class Transport {
  /**
   * @param {{apiKey?: string|null, baseUrl: string, timeout: number, maxRetries: number,
   *          defaultHeaders?: Record<string,string>, fetch?: typeof fetch,
   *          initialRetryDelay?: number, maxRetryDelay?: number}} options
   */
  constructor(options) {
    if (options.apiKey != null && typeof options.apiKey !== "string") {
      // Never shown: it may be a secret.
      throw new InvalidRequestError(`apiKey must be a string, not ${Array.isArray(options.apiKey) ? "an array" : typeof options.apiKey}.`);
    }
    if (!Number.isInteger(options.maxRetries) || options.maxRetries < 0) {
      throw new RangeError("maxRetries must be an integer >= 0");
    }
    // Not enumerable, so that logging the transport shows neither (see AgentClient).
    Object.defineProperty(this, "apiKey", { value: options.apiKey ?? null, enumerable: false, writable: true });
    this.baseUrl = checkBaseUrl(options.baseUrl);
    this.timeout = checkTimeout(options.timeout);
    this.maxRetries = options.maxRetries;
    const defaultHeaders = { ...(options.defaultHeaders ?? {}) };
    for (const [name, value] of Object.entries(defaultHeaders)) {
      // A default Idempotency-Key is checked as a call's is: HTTP would strip "abc " to another key.
      if (name.toLowerCase() === "idempotency-key") validateIdempotencyKey(value);
    }
    Object.defineProperty(this, "defaultHeaders", { value: defaultHeaders, enumerable: false, writable: true });
    this.fetch = options.fetch ?? globalThis.fetch;
    /** Whether the caller gave a fetch: its own limits are then the caller's (see FETCH_OWN_TIMEOUT_MS). */
    this.customFetch = options.fetch != null;
    this.fetchOwnTimeout = FETCH_OWN_TIMEOUT_MS; // ms; a test lowers it together with fetch's
    if (typeof this.fetch !== "function") {
      throw new QuiverError("No global fetch: use Node 18+ or pass { fetch } to AgentClient.");
    }
    this.initialRetryDelay = options.initialRetryDelay ?? 500; // ms
    this.maxRetryDelay = options.maxRetryDelay ?? 8000; // ms
    this.userAgent = `quiver-js/${VERSION} (${nodeVersion()})`;
    /** @type {(ms: number) => Promise<void>} */
    this.sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  }

  /**
   * Send a request, retrying when safe. Resolves to {data, headers, status}.
   * @param {string} method
   * @param {string} path
   * @param {{query?: Record<string, any>, body?: any, headers?: Record<string,string>, retry?: string, timeout?: number}} [options]
   */
  async request(method, path, options = {}) {
    const { query, body, headers, retry = SAFE, timeout } = options;
    let url = this.baseUrl + path;
    if (query) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined || v === null) continue;
        // URLSearchParams would send a lone surrogate as U+FFFD: another value than the one given.
        if (LONE_SURROGATE.test(String(v))) {
          throw new InvalidRequestError(
            `The request cannot be sent: its ${k} ${JSON.stringify(String(v))} has a lone surrogate, which is not Unicode text and has no URL form. Nothing was sent.`,
          );
        }
        params.set(k, String(v));
      }
      const qs = params.toString();
      if (qs) url += "?" + qs;
    }
    // Merged by name, whatever its case: the SDK's own values (the API key, the body's type, the
    // request's headers such as Idempotency-Key) win over defaultHeaders.
    const allHeaders = { Accept: "application/json", "User-Agent": this.userAgent };
    for (const [name, value] of Object.entries(this.defaultHeaders)) setHeader(allHeaders, name, value);
    if (this.apiKey) setHeader(allHeaders, "X-API-KEY", this.apiKey);
    let payload;
    if (body !== undefined) {
      // Encoded once: every retry sends the very same bytes.
      payload = encodeBody(body);
      setHeader(allHeaders, "Content-Type", "application/json; charset=utf-8");
    }
    for (const [name, value] of Object.entries(headers ?? {})) setHeader(allHeaders, name, value);
    checkHeaders(allHeaders);
    const effectiveTimeout = checkTimeout(timeout === undefined ? this.timeout : timeout); // null is refused

    let maybeDone = false; // an earlier attempt may have been acted on (its error's didNothing was false)
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        response = await this.#send(method, url, allHeaders, payload, effectiveTimeout);
      } catch (err) {
        // A refused connection sent nothing (didNothing): any request may be repeated.
        if (err instanceof APIConnectionError && (retry === SAFE || err.didNothing) && attempt < this.maxRetries) {
          maybeDone ||= !err.didNothing;
          await this.sleep(this.#delay(attempt, null));
          continue;
        }
        if (err instanceof QuiverError) markEarlierAttempts(err, maybeDone);
        throw err;
      }
      const { status, headers: resHeaders, text } = response;
      if (status >= 200 && status < 300) {
        return { data: decode(status, resHeaders, text), headers: resHeaders, status };
      }
      const error = errorFromResponse(status, resHeaders, text);
      if (method === "DELETE" && maybeDone && status === 404 && error.code === "not_found") {
        return { data: null, headers: resHeaders, status }; // an earlier attempt deleted it: done
      }
      if (attempt < this.maxRetries && shouldRetry(error, retry)) {
        if (error.retryAfter == null || error.retryAfter <= MAX_RETRY_AFTER_SECONDS) {
          maybeDone ||= !error.didNothing;
          await this.sleep(this.#delay(attempt, error.retryAfter));
          continue;
        }
      }
      markEarlierAttempts(error, maybeDone);
      throw error;
    }
  }

  #delay(attempt, retryAfterSeconds) {
    if (retryAfterSeconds != null) return retryAfterSeconds * 1000;
    const base = Math.min(this.maxRetryDelay, this.initialRetryDelay * 2 ** attempt);
    return base * (0.75 + Math.random() * 0.25);
  }

  async #send(method, url, headers, payload, timeout) {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeout);
    try {
      if (
        DOT_SEGMENT.test(requestTarget(url).replace(/[?#].*$/, "")) ||
        (!this.customFetch && timeout > this.fetchOwnTimeout)
      ) {
        return await sendAsWritten(method, url, headers, payload, controller.signal);
      }
      // Redirects are not followed (node:http never follows them): one could take the API key, or a
      // POST's body, to another origin, or turn a POST into a GET. A 3xx is an APIStatusError.
      const res = await this.fetch(url, { method, headers, body: payload, signal: controller.signal, redirect: "manual" });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text };
    } catch (err) {
      if (timedOut) throw new APITimeoutError(`Request timed out after ${timeout} ms.`, { cause: err });
      if (err instanceof QuiverError) throw err;
      for (let e = err; e; e = e.cause) {
        if (e.code === "ETIMEDOUT") {
          // The system gave up on the connection (as Python's TimeoutError, an APITimeoutError there too).
          throw new APITimeoutError("Request timed out: the connection timed out (ETIMEDOUT).", { cause: err });
        }
        if (FETCH_TIMEOUT_CODES.has(e.code)) {
          throw new APITimeoutError(`Request timed out: fetch gave up waiting (${e.code}) before the ${timeout} ms timeout.`, {
            cause: err,
          });
        }
      }
      if (err instanceof TypeError && /invalid url|failed to parse url/i.test(String(err.message))) {
        throw new InvalidRequestError(`Invalid URL ${url}. Nothing was sent.`, { cause: err });
      }
      if (err instanceof TypeError && err.cause === undefined && /header|bytestring/i.test(String(err.message))) {
        // fetch refused a header before sending anything: a local error, not a connection one. (Its
        // message may quote the header's value, which may be a secret: it stays in `cause` only.)
        throw new InvalidRequestError("A request header cannot be sent. Nothing was sent.", { cause: err });
      }
      const detail = err?.cause?.code || err?.cause?.message || err?.code || err?.message || String(err);
      throw new APIConnectionError(`Connection error: ${detail}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Send a request with node:http(s), its path exactly as written (see DOT_SEGMENT), and with no deadline but
 * `signal` (see FETCH_OWN_TIMEOUT_MS). Resolves like #send's
 * fetch branch to {status, headers (a Headers), text}; `signal` aborts it, body included.
 */
async function sendAsWritten(method, url, headers, payload, signal) {
  const target = new URL(url); // for the origin only: its path may have lost dot segments
  let mod;
  try {
    mod = await import(target.protocol === "https:" ? "node:https" : "node:http");
  } catch (err) {
    throw new QuiverError(`The path ${requestTarget(url)} cannot be sent with fetch, and node:http is not available.`, {
      cause: err,
    });
  }
  return new Promise((resolve, reject) => {
    const req = mod.request(
      {
        protocol: target.protocol,
        hostname: target.hostname.replace(/^\[(.*)\]$/, "$1"),
        port: target.port || undefined,
        path: requestTarget(url),
        method,
        headers: payload === undefined ? headers : { ...headers, "Content-Length": Buffer.byteLength(payload) },
        signal,
        agent: false,
      },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("error", reject);
        res.on("close", () => {
          if (!res.complete) reject(new Error("the connection closed before the whole response arrived"));
        });
        res.on("end", () => {
          const resHeaders = new Headers();
          for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) resHeaders.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
          resolve({ status: res.statusCode, headers: resHeaders, text: Buffer.concat(chunks).toString("utf8") });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** Record on the error to be thrown whether an earlier attempt may have been acted on (unseen by console.log). */
function markEarlierAttempts(error, maybeDone) {
  Object.defineProperty(error, EARLIER_ATTEMPT_MAY_HAVE_RUN, { value: maybeDone, enumerable: false, configurable: true });
}

function shouldRetry(error, mode) {
  const status = error.status ?? 0;
  const code = error.code;
  // Quiver's own word that it did nothing (QuiverError#didNothing, the one rule of both SDKs), about a state
  // that passes (load, its database): any request may be repeated.
  if (error.didNothing && (code === "rate_limited" || code === "unavailable")) return true;
  if (mode !== SAFE) return false;
  if (code === "request_in_progress") return true;
  if (code === "tool_outcome_unknown" || code === "upstream_auth_failed" || code === "upstream_refused") return false;
  return status === 429 || status >= 500;
}

function decode(status, headers, text) {
  if (status === 204 || !text) return null;
  try {
    return parseJSON(text);
  } catch (err) {
    // Often a web page, from a baseUrl that names another server.
    const snippet = JSON.stringify(bodySnippet(text));
    throw new QuiverError(`The server answered ${status} with a body that is not JSON (is baseUrl right?): ${snippet}`, {
      status,
      headers,
      cause: err,
    });
  }
}
