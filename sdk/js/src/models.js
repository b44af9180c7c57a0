// Objects returned by the SDK: the server's JSON fields (snake_case, enumerable, so console.log and
// JSON.stringify show exactly what the server sent) plus non-enumerable camelCase aliases
// (tool.isConfigured === tool.is_configured). Opaque payloads that belong to the tool or the user
// (result, structured_content, config, input_schema, output_schema, arguments, headers, user_response)
// stay plain JSON values.

/** @param {string} s */
export function camelCase(s) {
  return s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
}

const OPAQUE = new Set([
  "result",
  "structured_content",
  "config",
  "input_schema",
  "output_schema",
  "arguments",
  "headers",
  "user_response",
]);

/** A JSON object from the server with camelCase aliases of its snake_case fields. */
export class QuiverObject {
  /**
   * @param {Record<string, any>} [data]
   */
  constructor(data = {}) {
    // Defined, not assigned: a field named "__proto__" stays a field, and never sets the prototype.
    for (const [key, value] of Object.entries(data)) {
      const Cls = Object.hasOwn(NESTED, key) ? NESTED[key] : QuiverObject;
      const field = OPAQUE.has(key) ? value : wrap(value, Cls);
      Object.defineProperty(this, key, { value: field, writable: true, enumerable: true, configurable: true });
    }
    for (const key of Object.keys(data)) {
      const alias = camelCase(key);
      if (alias === key || Object.hasOwn(this, alias) || alias in QuiverObject.prototype) continue;
      Object.defineProperty(this, alias, {
        get: () => this[key],
        set: (v) => {
          this[key] = v;
        },
        enumerable: false,
        configurable: true,
      });
    }
  }

  /**
   * The server's fields as a plain object (for JSON.stringify). JSON.stringify cannot write a BigInt (an
   * integer beyond Number.MAX_SAFE_INTEGER, such as a large ID), so one is given as its decimal string.
   */
  toJSON() {
    return Object.fromEntries(Object.entries(this).map(([key, value]) => [key, bigIntsAsStrings(value)]));
  }
}

function hasBigInt(value) {
  if (typeof value === "bigint") return true;
  if (value === null || typeof value !== "object" || value instanceof QuiverObject) return false; // it has its own toJSON
  return Object.values(value).some(hasBigInt);
}

/** `value`, or a copy of it with each BigInt as its decimal string. */
function bigIntsAsStrings(value) {
  if (!hasBigInt(value)) return value;
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map(bigIntsAsStrings);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, bigIntsAsStrings(v)]));
}

function wrap(value, Cls) {
  if (Array.isArray(value)) return value.map((v) => wrap(v, Cls));
  if (value !== null && typeof value === "object") return new Cls(value);
  return value;
}

/** One configuration step of a tool. */
export class ConfigurationStep extends QuiverObject {}
/** A catalog entry. */
export class AvailableTool extends QuiverObject {}
/** A tool connected to the account. */
export class Tool extends QuiverObject {}
/** An action a tool can run. */
export class Action extends QuiverObject {}
/** An agent. */
export class Agent extends QuiverObject {}
/** One dispatched call in the call log. */
export class CallLogEntry extends QuiverObject {}
/** The state of an idempotency key. */
export class IdempotencyKeyState extends QuiverObject {}

/** The outcome of tools.call(); `replayed` is true when the server replayed a stored outcome. */
export class CallResult extends QuiverObject {
  /**
   * @param {Record<string, any>} data
   * @param {Headers} [headers]
   */
  constructor(data = {}, headers) {
    super(data);
    const replayed = String(headers?.get?.("idempotent-replayed") ?? "").toLowerCase() === "true";
    Object.defineProperty(this, "replayed", { value: replayed, enumerable: false, configurable: true });
  }
}

/** One page of a list: `items` and `nextCursor` (null on the last page). Iterable. */
export class Page {
  /**
   * @param {any[]} items
   * @param {string|null} nextCursor
   */
  constructor(items, nextCursor) {
    this.items = items;
    this.nextCursor = nextCursor ?? null;
  }

  get next_cursor() {
    return this.nextCursor;
  }

  [Symbol.iterator]() {
    return this.items[Symbol.iterator]();
  }
}

const NESTED = {
  next_configuration_step: ConfigurationStep,
  config_steps: ConfigurationStep,
  actions: Action,
};
