// Typed errors. The class is chosen by the server's `error` code first, then by the HTTP status.

import { parseJSON } from "./json.js";
import { camelCase, ConfigurationStep } from "./models.js";

// RFC 9110's IMF-fixdate, the one HTTP-date form a sender may generate: "Sun, 06 Nov 1994 08:49:37 GMT".
const IMF_FIXDATE = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Seconds from a Retry-After header, or undefined. Only RFC 9110's forms are read: delta-seconds
 * (1*DIGIT) or an IMF-fixdate (a date in the past is 0); anything else ("1.5", "0x10", "1, 2" from two
 * headers, other date formats) is ignored.
 * @param {string|null|undefined} value
 * @returns {number|undefined}
 */
export function parseRetryAfter(value) {
  if (value == null) return undefined;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return Number(text);
  if (!IMF_FIXDATE.test(text)) return undefined;
  const when = Date.parse(text);
  // A date that does not exist ("32 Oct") is refused: it does not come back unchanged (weekday aside).
  if (Number.isNaN(when) || new Date(when).toUTCString().slice(5) !== text.slice(5)) return undefined;
  return Math.max(0, (when - Date.now()) / 1000);
}

/**
 * The error codes of API.md whose answer says the request did nothing: it was refused before anything was
 * sent to the tool (unavailable: before anything was dispatched), so no idempotency key holds an outcome of
 * it. Not among them: idempotency_key_reused and request_in_progress (the key's earlier request ran or is
 * running), tool_outcome_unknown, and internal (a bug, which may come after a change was made). The one rule
 * both SDKs share; see QuiverError#didNothing.
 */
export const DID_NOTHING_CODES = new Set([
  "bad_request",
  "invalid_json",
  "invalid_idempotency_key",
  "idempotency_key_required",
  "unauthorized",
  "forbidden",
  "not_found",
  "tool_not_configured",
  "payload_too_large",
  "validation_error",
  "invalid_arguments",
  "rate_limited",
  "tool_unreachable",
  "upstream_auth_failed",
  "upstream_refused",
  "unavailable",
]);

/**
 * Set by the transport on an error thrown after an earlier attempt of the same request (retried
 * automatically) may have been acted on: the request as a whole then did not provably do nothing.
 */
export const EARLIER_ATTEMPT_MAY_HAVE_RUN = Symbol("quiver.earlierAttemptMayHaveRun");

/** Whether the connection was refused: the request was never sent. */
function refused(err) {
  for (let e = err; e; e = e.cause) if (e.code === "ECONNREFUSED") return true;
  return false;
}

/** What the error itself says of the attempt it came from (see QuiverError#didNothing). */
function saysItDidNothing(err) {
  if (err instanceof InvalidRequestError) return true; // nothing was sent
  // Only a refused connection was never sent; any other may have been cut after the request left.
  if (err instanceof APIConnectionError) return refused(err);
  if (err instanceof APIStatusError) return DID_NOTHING_CODES.has(err.code);
  return false; // a 2xx that is not JSON, or not the API's shape, proves nothing
}

/** Base class of every error the SDK throws. */
export class QuiverError extends Error {
  /**
   * @param {string} message
   * @param {{code?: string|null, status?: number|null, body?: Record<string, any>|null, headers?: Headers|null, cause?: unknown}} [options]
   */
  constructor(message, options = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = new.target.name;
    /** The server's `error` code, or null. */
    this.code = options.code ?? null;
    /** The HTTP status, or null when no response was received. */
    this.status = options.status ?? null;
    /** The whole decoded error body ({} when it was not JSON). */
    this.body = options.body ?? {};
    /** The response headers, or null. */
    this.headers = options.headers ?? null;
    /** The response's X-Request-Id, else the body's request_id, or null. */
    this.requestId =
      this.headers?.get?.("x-request-id") || (typeof this.body.request_id === "string" ? this.body.request_id : null);
    /** Seconds from the Retry-After header, or null. */
    this.retryAfter = parseRetryAfter(this.headers?.get?.("retry-after")) ?? null;
    // Extra fields of the error body, under their own (snake_case) names and camelCase aliases.
    for (const [key, value] of Object.entries(this.body)) {
      if (key === "error" || key === "message" || key in this) continue;
      this[key] = value;
      const alias = camelCase(key);
      if (alias !== key && !(alias in this)) this[alias] = value;
    }
  }

  /**
   * Whether the request provably did nothing, on none of its attempts: sending it again (with the same
   * idempotency key, which then holds no outcome, or a new one) cannot do anything twice. True for an error
   * thrown before anything was sent (InvalidRequestError, a key refused client-side), a refused connection,
   * and Quiver's answers that say so (a 4xx other than idempotency_key_reused, request_in_progress and
   * tool_outcome_unknown; 502 tool_unreachable, upstream_auth_failed, upstream_refused; 503 unavailable), as
   * long as no earlier attempt of the same request may have been acted on. False for everything else: a cut
   * connection or timeout, 500 internal, tool_outcome_unknown, and any answer without Quiver's `error` code
   * (a proxy's page proves nothing of what happened behind it).
   */
  get didNothing() {
    return !this[EARLIER_ATTEMPT_MAY_HAVE_RUN] && saysItDidNothing(this);
  }

  /** Alias of `didNothing`. */
  get did_nothing() {
    return this.didNothing;
  }

  /** Alias of `status`. */
  get statusCode() {
    return this.status;
  }

  /** Alias of `requestId`. */
  get request_id() {
    return this.requestId;
  }

  /** Alias of `retryAfter`. */
  get retry_after() {
    return this.retryAfter;
  }
}

/**
 * The request cannot be sent as given; thrown before anything is sent, and never retried: an API key or
 * header value HTTP headers cannot carry (a character above U+00FF, or NUL/CR/LF), an invalid header name,
 * an invalid baseUrl, a body JSON cannot carry as given (NaN, ±Infinity, a cycle, a lone surrogate), a lone
 * surrogate in a name or ID that goes in the URL. `status` is null.
 */
export class InvalidRequestError extends QuiverError {}

/** No response came back: the connection failed, was cut, or timed out. */
export class APIConnectionError extends QuiverError {
  constructor(message = "Connection error.", options = {}) {
    super(message, options);
  }
}

/** The request timed out before a response arrived. */
export class APITimeoutError extends APIConnectionError {
  constructor(message = "Request timed out.", options = {}) {
    super(message, options);
  }
}

/** The server answered with a non-2xx status (a 3xx too: redirects are not followed). */
export class APIStatusError extends QuiverError {}
/**
 * 400 (invalid_json, ...); also Quiver's bad_request for a request it refuses before routing, whatever the
 * status (431 for a header block over its limit, 417, 505).
 */
export class BadRequestError extends APIStatusError {}
/** 400 invalid_json: the body is not JSON, not an object, or has a duplicate key. */
export class InvalidJSONError extends BadRequestError {}
/** 400 invalid_idempotency_key, or a key refused client-side (status null). */
export class InvalidIdempotencyKeyError extends BadRequestError {}
/** 400 idempotency_key_required: a non-retryable action was called without a key. */
export class IdempotencyKeyRequiredError extends BadRequestError {}
/** 401: missing or unknown API key. */
export class AuthenticationError extends APIStatusError {}
/** 403: the key lacks the permission. */
export class PermissionDeniedError extends APIStatusError {}
/** 404: not found, or another account's. */
export class NotFoundError extends APIStatusError {}
/**
 * 409 (base of the specific conflicts). `instanceof ConflictError` also holds for the 409 form of
 * tool_outcome_unknown, a ToolOutcomeUnknownConflictError (as in the Python SDK, where it is both).
 */
export class ConflictError extends APIStatusError {
  static [Symbol.hasInstance](value) {
    const plain = Function.prototype[Symbol.hasInstance];
    if (plain.call(this, value)) return true;
    // Only ConflictError itself: its subclasses inherit this method, and are not the 409 tool_outcome_unknown.
    return this === ConflictError && plain.call(ToolOutcomeUnknownConflictError, value);
  }
}
/** 409 idempotency_key_reused: same key, different body. */
export class IdempotencyKeyReusedError extends ConflictError {}
/** 409 request_in_progress: an earlier request with this key is still running (`retryAfter`). */
export class RequestInProgressError extends ConflictError {}
/**
 * 409 tool_not_configured: carries `nextConfigurationStep` / `next_configuration_step`, a ConfigurationStep
 * like a tool's (`step`, `fields`, `authorizationUrl` / `authorization_url`), or null.
 */
export class ToolNotConfiguredError extends ConflictError {
  constructor(message, options = {}) {
    super(message, options);
    const step = this.next_configuration_step;
    if (step !== null && typeof step === "object" && !Array.isArray(step)) {
      this.next_configuration_step = this.nextConfigurationStep = new ConfigurationStep(step);
    }
  }
}
/**
 * 504 or 409 tool_outcome_unknown: terminal for the key; the tool is never re-run for it. The 409 form
 * (every later answer for the key) is a ToolOutcomeUnknownConflictError, an instanceof ConflictError too.
 */
export class ToolOutcomeUnknownError extends APIStatusError {}
/**
 * 409 tool_outcome_unknown: a later request with a key whose outcome is unknown. Both `instanceof
 * ToolOutcomeUnknownError` (both forms) and `instanceof ConflictError` (every 409); the first answer, the
 * 504, is a ToolOutcomeUnknownError only.
 */
export class ToolOutcomeUnknownConflictError extends ToolOutcomeUnknownError {}
/** 413 payload_too_large. */
export class PayloadTooLargeError extends APIStatusError {}
/** 422 validation_error / invalid_arguments: carries `fields`. */
export class ValidationError extends APIStatusError {
  constructor(message, options = {}) {
    super(message, options);
    if (!this.fields || typeof this.fields !== "object") this.fields = {};
  }
}
/**
 * 422 invalid_arguments: the call's `arguments` do not satisfy the action's input schema; `fields` names each
 * bad argument. (validation_error, any other bad field, is the ValidationError itself.)
 */
export class InvalidArgumentsError extends ValidationError {}
/** 429 rate_limited (`retryAfter`). */
export class RateLimitError extends APIStatusError {}
/**
 * 500 internal (a server bug; carries `requestId`), and any 5xx without a Quiver `error` code (code null,
 * the real status): usually from something between the SDK and Quiver, like a proxy's HTML 502/503/504,
 * which says nothing of whether the request reached Quiver or what Quiver did.
 */
export class InternalServerError extends APIStatusError {}
/** 502 tool_unreachable: the request provably never left. */
export class ToolUnreachableError extends APIStatusError {}
/** 502 upstream_auth_failed: the tool's server rejected Quiver's credentials. */
export class UpstreamAuthFailedError extends APIStatusError {}
/**
 * 502 upstream_refused: the tool's server refused the request itself and nothing ran (an HTTP 4xx from it
 * other than 401/403/429, or a JSON-RPC refusal not about the arguments, like "method not found"). The
 * idempotency key is released. Deterministic: the same request gets the same refusal, so never retried.
 */
export class UpstreamRefusedError extends APIStatusError {}
/** 503 unavailable. */
export class ServiceUnavailableError extends APIStatusError {}

const BY_CODE = {
  // Quiver's code for a request it refuses before routing (431 headers too large, 417, 505), whatever the status.
  bad_request: BadRequestError,
  invalid_json: InvalidJSONError,
  invalid_idempotency_key: InvalidIdempotencyKeyError,
  idempotency_key_required: IdempotencyKeyRequiredError,
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  not_found: NotFoundError,
  idempotency_key_reused: IdempotencyKeyReusedError,
  request_in_progress: RequestInProgressError,
  tool_outcome_unknown: ToolOutcomeUnknownError,
  tool_not_configured: ToolNotConfiguredError,
  payload_too_large: PayloadTooLargeError,
  validation_error: ValidationError,
  invalid_arguments: InvalidArgumentsError,
  rate_limited: RateLimitError,
  tool_unreachable: ToolUnreachableError,
  upstream_auth_failed: UpstreamAuthFailedError,
  upstream_refused: UpstreamRefusedError,
  unavailable: ServiceUnavailableError,
  internal: InternalServerError,
};

// Without a known Quiver code, only a 4xx is classed by its status: a 4xx says what was wrong with the
// request, which means the same from a proxy as from Quiver. The specific 5xx classes state facts only
// Quiver's code can vouch for (ToolUnreachableError: the request provably never left;
// ServiceUnavailableError: the server did nothing), so a 5xx without one (a proxy's HTML 502/503/504) is
// the generic InternalServerError, with its real status and code null.
const BY_STATUS = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: ValidationError,
  429: RateLimitError,
};

/**
 * The typed error for a non-2xx response.
 * @param {number} status
 * @param {Headers} headers
 * @param {string} text the response body
 */
export function errorFromResponse(status, headers, text) {
  let body = {};
  try {
    const decoded = text ? parseJSON(text) : null;
    if (decoded && typeof decoded === "object" && !Array.isArray(decoded)) body = decoded;
  } catch {
    // not JSON
  }
  const code = typeof body.error === "string" ? body.error : null;
  if (status >= 300 && status < 400) {
    // Not followed: it could take the API key, or a POST's body, to another origin.
    const where = headers?.get?.("location");
    const message = `The server answered ${status}, a redirect${where ? ` to ${where}` : ""}; the SDK does not follow redirects. Check baseUrl.`;
    return new APIStatusError(message, { code, status, body, headers });
  }
  let message = typeof body.message === "string" && body.message ? body.message : null;
  if (!message) message = bodySnippet(text) || `HTTP ${status}`;
  const Cls =
    (code === "tool_outcome_unknown" && status === 409 && ToolOutcomeUnknownConflictError) ||
    (code && Object.hasOwn(BY_CODE, code) && BY_CODE[code]) ||
    (status >= 500 ? InternalServerError : BY_STATUS[status] ?? APIStatusError);
  return new Cls(message, { code, status, body, headers });
}

/** A body's first 200 characters, as an error's message quotes a body that says nothing itself. */
export function bodySnippet(text) {
  return (text || "").slice(0, 200).trim();
}

/** A readable one-line form: "404 not_found: Tool 9 does not exist." */
QuiverError.prototype.toString = function toString() {
  const prefix = [this.status, this.code].filter((x) => x != null && x !== "").join(" ");
  return `${this.name}: ${prefix ? prefix + ": " : ""}${this.message}`;
};
