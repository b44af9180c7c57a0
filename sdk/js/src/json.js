// JSON with exact integers. The API's IDs are int64 and a tool's result is whatever JSON the tool gave,
// but a JavaScript number holds integers exactly only up to 2^53 - 1: JSON.parse reads tool ID
// 9007199254740993 as 9007199254740992, another tool's ID. So an integer literal beyond
// Number.MAX_SAFE_INTEGER is read as a BigInt, and a BigInt is written as its integer literal.
//
// Node 20 has neither JSON.parse's source text access nor JSON.rawJSON, so both directions go through
// JSON itself with a stand-in: each such literal becomes a string made of a per-call random marker and the
// digits, which a reviver (reading) or a pass over the text (writing) turns into the value. No real string
// can be taken for a stand-in: it would have to contain the marker, 128 random bits made for that call.

// Every integer of up to 15 digits is safe, so a text without 16 digits in a row needs no care.
const LONG_DIGITS = /\d{16}/;

function marker() {
  const bytes = new Uint8Array(16);
  if (globalThis.crypto?.getRandomValues) globalThis.crypto.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return `\u0000quiver-int:${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}:`;
}

/** The index just past the JSON string that starts at text[start] (a '"'), or text.length if it never ends. */
function stringEnd(text, start) {
  for (let i = start + 1; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x5c /* \ */) i++;
    else if (ch === 0x22 /* " */) return i + 1;
  }
  return text.length;
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

/**
 * JSON.parse, except that an integer literal (no fraction, no exponent) beyond the safe range is a BigInt.
 * Throws SyntaxError as JSON.parse does.
 * @param {string} text
 */
export function parseJSON(text) {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  const mark = marker();
  let out = "";
  let last = 0;
  let found = false;
  for (let i = 0; i < text.length; ) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      i = stringEnd(text, i);
      continue;
    }
    if (ch === 0x2d /* - */ || (ch >= 0x30 && ch <= 0x39)) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) {
        i++; // not a number: JSON.parse will say so
        continue;
      }
      const literal = m[0];
      if (m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(Number(literal))) {
        out += text.slice(last, i) + JSON.stringify(mark + literal);
        last = i + literal.length;
        found = true;
      }
      i += literal.length;
      continue;
    }
    i++;
  }
  if (!found) return JSON.parse(text);
  return JSON.parse(out + text.slice(last), (_key, value) =>
    typeof value === "string" && value.startsWith(mark) ? BigInt(value.slice(mark.length)) : value,
  );
}

/**
 * JSON.stringify(value, replacer), except that a BigInt is written as its integer literal (JSON.stringify
 * throws a TypeError for one). The replacer sees a BigInt as it is and may return one.
 * @param {unknown} value
 * @param {(this: any, key: string, value: any) => any} [replacer]
 */
export function stringifyJSON(value, replacer) {
  const mark = marker();
  let found = false;
  const text = JSON.stringify(value, function (key, v) {
    const r = replacer ? replacer.call(this, key, v) : v;
    if (typeof r !== "bigint") return r;
    found = true;
    return mark + r.toString();
  });
  if (!found) return text;
  // JSON.stringify writes the marker's U+0000 as \u0000; the stand-in is always a whole string.
  const written = JSON.stringify(mark).slice(1, -1).replace(/\\/g, "\\\\");
  return text.replace(new RegExp(`"${written}(-?\\d+)"`, "g"), "$1");
}
