/**
 * The one strict JSON reader, for every JSON text a stranger sends: API request bodies
 * (server/api/rest.ts) and receipt documents (the public validator and the import).
 *
 * JSON.parse alone is not enough for a system of record:
 * - it keeps the last of a repeated member name silently. RFC 7493 (I-JSON) says names MUST be
 *   unique: `{"title":"a","title":"b"}` would mean one thing here and another to a client, a proxy
 *   or a log reader, and idempotency fingerprints and hash-chained payloads would be computed over
 *   a value the sender never wrote;
 * - it nests as deep as it is sent, and recursive code further on (JSON.stringify, the canonical
 *   form hashed into the ledger, PostgreSQL's jsonb) overflows its stack on deep input (a
 *   checkpoint state 5,000 levels deep was a 500);
 * - it takes any number of values, and a schema validator then walks them all;
 * - its error messages quote the input and only sometimes say where the problem is.
 *
 * So one pass checks the text's grammar and its structure first, with an explicit stack (never
 * recursion), and stops at the first problem: a 1 MiB run of `[` stops at byte 65. Strings and
 * numbers are matched with sticky regular expressions, so the pass is linear in the text. Only a
 * text that passes is handed to JSON.parse, which builds the value natively (faster than any
 * reader written in JavaScript, and it cannot fail then). Paths are JSON pointers (RFC 6901) and
 * are built only when there is a problem to report.
 *
 * JSON also carries what no store can keep, and the same pass refuses it ('unstorable'): U+0000
 * and lone surrogates in a string or a member name (PostgreSQL's text and jsonb refuse both, and
 * a lone surrogate is not Unicode text), and numbers beyond a 64-bit float (1e400 would become
 * Infinity, which JSON cannot even write back).
 */

export interface StrictJsonLimits {
  /** The deepest nesting allowed, counting the outermost container as 1. */
  maxDepth: number;
  /** The most values allowed, containers and the document itself included. */
  maxNodes?: number;
  /**
   * Refuse members named `__proto__`. JSON.parse keeps such a member as plain data, so API bodies
   * allow it (closed bodies refuse it as an unknown field, free-form objects keep it); receipt
   * documents, read by code we do not all control (ajv, exporters), refuse it.
   */
  refuseProtoKey?: boolean;
  /**
   * Let strings no store keeps through (U+0000, lone surrogates) while the rest is checked: for a
   * reader whose values are written out as JSON and read strictly again where they are used (the
   * MCP endpoint's messages: a tool's arguments become a REST body, whose reader refuses them by
   * their field). A number beyond a double is refused still: written out again, it would be null.
   */
  keepUnstorableText?: boolean;
}

export type StrictJsonProblem =
  /** Not JSON; `offset` is in UTF-8 bytes from the start of the text. */
  | { kind: 'syntax'; message: string; offset: number }
  | { kind: 'duplicate_key' | 'forbidden_key' | 'depth' | 'nodes' | 'unstorable'; message: string; path: string };

export type StrictJsonResult = { ok: true; value: unknown; nodes: number; depth: number } | { ok: false; problem: StrictJsonProblem };

/** UTF-8 text of `bytes`, or null when they are not valid UTF-8. */
export function utf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** An open object (its member names so far) or array (its current index). */
interface Frame {
  /** Member names of an object; null for an array. */
  names: string[] | null;
  /** The names again, once there are enough of them for a set to beat a scan. */
  set: Set<string> | null;
  index: number;
}

const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);

/**
 * The end (after the closing quote) of the string whose opening quote is at `start`: only the
 * escapes JSON has, no raw control character. Whether it held an escape is left in `escaped`, and
 * what in it cannot be stored (U+0000, a lone surrogate, escaped or not) in `unstorable`.
 * (A loop over char codes: faster here than a sticky regular expression for the runs between.)
 */
let escaped = false;
let unstorable: string | null = null;
/** The code unit escaped as \uXXXX at `i` (the backslash), or -1 when there is none. */
function escapedUnit(text: string, i: number): number {
  return text.charCodeAt(i) === 0x5c && text.charCodeAt(i + 1) === 0x75 ? parseInt(text.slice(i + 2, i + 6), 16) : -1;
}
const isHigh = (u: number) => u >= 0xd800 && u <= 0xdbff;
const isLow = (u: number) => u >= 0xdc00 && u <= 0xdfff;
const loneSurrogate = (u: number) => `a lone surrogate (\\u${u.toString(16)}), which is not Unicode text`;
function stringEnd(text: string, start: number): number {
  escaped = false;
  unstorable = null;
  // A high surrogate just read (escaped or raw), waiting for its low half; -1 when none.
  let high = -1;
  for (let i = start + 1; ; i++) {
    const c = text.charCodeAt(i);
    let unit = c;
    if (c === 0x22) {
      if (high >= 0) unstorable ??= loneSurrogate(high);
      return i + 1;
    }
    if (c === 0x5c) {
      escaped = true;
      const e = text.charCodeAt(i + 1);
      if (e === 0x75) {
        if (!(
          isHex(text.charCodeAt(i + 2)) &&
          isHex(text.charCodeAt(i + 3)) &&
          isHex(text.charCodeAt(i + 4)) &&
          isHex(text.charCodeAt(i + 5))
        )) {
          throw new Syntax('a bad escape in a string', i);
        }
        unit = escapedUnit(text, i);
        if (unit === 0) unstorable ??= 'U+0000 (NUL), which cannot be stored';
        i += 5;
      } else if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) i++;
      else throw new Syntax('a bad escape in a string', i);
    } else if (c < 0x20) throw new Syntax('a control character in a string', i);
    else if (Number.isNaN(c)) throw new Syntax('an unterminated string', start);
    // Surrogates pair up, high then low; any other unit after a high one, or a low one alone, is lone.
    if (high >= 0 && !isLow(unit)) unstorable ??= loneSurrogate(high);
    else if (high < 0 && isLow(unit)) unstorable ??= loneSurrogate(unit);
    high = high < 0 && isHigh(unit) ? unit : -1;
  }
}

/** True when the number text from `from` to `to` has an exponent (e or E). */
function hasExponent(text: string, from: number, to: number): boolean {
  for (let k = from; k < to; k++) if ((text.charCodeAt(k) | 0x20) === 0x65) return true;
  return false;
}

/** Whether this reading lets unstorable strings through (StrictJsonLimits.keepUnstorableText). */
let keepUnstorable = false;

/** Refuses the string just read (at the current path) when it holds what cannot be stored. */
function refuseUnstorable(frames: Frame[], what: string): void {
  if (unstorable !== null && !keepUnstorable)
    throw new Refused({ kind: 'unstorable', message: `${what} holds ${unstorable}`, path: pointer(frames) });
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

class Syntax {
  constructor(
    readonly message: string,
    readonly index: number,
  ) {}
}

class Refused {
  constructor(readonly problem: StrictJsonProblem) {}
}

const pointerPart = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The JSON pointer of the value being read in the innermost open container. */
function pointer(frames: Frame[]): string {
  let path = '';
  for (const f of frames) path += `/${pointerPart(f.names ? (f.names[f.names.length - 1] ?? '') : String(f.index))}`;
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

/** The index of the first non-whitespace character at or after `i`. */
function skipSpace(text: string, i: number): number {
  let c = text.charCodeAt(i);
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++i);
  return i;
}

/**
 * The member name at `i` in the object `frames` ends with, checked against that object's other
 * names (and against `__proto__` when refused), then its ':'. Returns where its value starts.
 * (Top-level functions rather than closures in readStrictJson: no function objects per call.)
 */
function memberName(text: string, i: number, frames: Frame[], refuseProtoKey: boolean | undefined): number {
  const top = frames[frames.length - 1]!;
  const names = top.names!;
  if (text.charCodeAt(i) !== 0x22) throw new Syntax(i < text.length ? 'expected a member name' : 'unexpected end of input', i);
  const end = stringEnd(text, i);
  const name = escaped ? (JSON.parse(text.slice(i, end)) as string) : text.slice(i + 1, end - 1);
  const seen = top.set ? top.set.has(name) : names.includes(name);
  names.push(name);
  refuseUnstorable(frames, 'a member name');
  if (seen || (name === '__proto__' && refuseProtoKey)) {
    const message = seen
      ? `the member name ${JSON.stringify(name).slice(0, 120)} appears twice in one object`
      : 'a member named __proto__ is not allowed';
    throw new Refused({ kind: seen ? 'duplicate_key' : 'forbidden_key', message, path: pointer(frames) });
  }
  if (top.set) top.set.add(name);
  else if (names.length > 16) top.set = new Set(names);
  i = skipSpace(text, end);
  if (text.charCodeAt(i) !== 0x3a) throw new Syntax("expected ':' after a member name", i);
  return skipSpace(text, i + 1);
}

/**
 * Reads `text` as one JSON value within `limits`: the value, or the first problem (syntax,
 * a repeated member name, a `__proto__` member when refused, too deep, too many values).
 */
export function readStrictJson(text: string, limits: StrictJsonLimits): StrictJsonResult {
  const n = text.length;
  const frames: Frame[] = [];
  const maxNodes = limits.maxNodes ?? Infinity;
  let nodes = 0;
  let depth = 0;
  let i = 0;
  keepUnstorable = limits.keepUnstorableText === true;

  try {
    i = skipSpace(text, 0);
    value: for (;;) {
      // A value starts at i.
      if (++nodes > maxNodes) throw new Refused({ kind: 'nodes', message: `more than ${maxNodes} values`, path: pointer(frames) });
      const c = text.charCodeAt(i);
      if (c === 0x7b || c === 0x5b) {
        if (frames.length >= limits.maxDepth) {
          throw new Refused({ kind: 'depth', message: `nested deeper than ${limits.maxDepth} levels`, path: pointer(frames) });
        }
        const frame: Frame = { names: c === 0x7b ? [] : null, set: null, index: 0 };
        frames.push(frame);
        if (frames.length > depth) depth = frames.length;
        i = skipSpace(text, i + 1);
        if (text.charCodeAt(i) !== (c === 0x7b ? 0x7d : 0x5d)) {
          if (frame.names) i = memberName(text, i, frames, limits.refuseProtoKey);
          continue value;
        }
        // An empty container: closed below.
      } else if (c === 0x22) {
        i = stringEnd(text, i);
        refuseUnstorable(frames, 'a string');
      } else if (text.startsWith('true', i)) i += 4;
      else if (text.startsWith('false', i)) i += 5;
      else if (text.startsWith('null', i)) i += 4;
      else {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) throw new Syntax(i < n ? 'unexpected character' : 'unexpected end of input', i);
        const from = i;
        i = NUMBER.lastIndex;
        if (i < n && /[.eE\d]/.test(text[i]!)) throw new Syntax('a malformed number', i);
        // Only an exponent or a run of over 308 digits can overflow a double.
        if ((i - from > 308 || hasExponent(text, from, i)) && !Number.isFinite(Number(text.slice(from, i)))) {
          const shown = i - from > 40 ? `${text.slice(from, from + 40)}…` : text.slice(from, i);
          throw new Refused({
            kind: 'unstorable',
            message: `the number ${shown} is beyond a 64-bit float (IEEE 754 double)`,
            path: pointer(frames),
          });
        }
      }
      // After a value: close containers or move to the next member or item.
      for (;;) {
        i = skipSpace(text, i);
        const top = frames[frames.length - 1];
        if (!top) break value;
        const c = text.charCodeAt(i);
        if (c === 0x2c) {
          i = skipSpace(text, i + 1);
          if (top.names) i = memberName(text, i, frames, limits.refuseProtoKey);
          else top.index++;
          continue value;
        }
        if (c !== (top.names ? 0x7d : 0x5d)) {
          throw new Syntax(i >= n ? 'unexpected end of input' : top.names ? "expected ',' or '}'" : "expected ',' or ']'", i);
        }
        frames.pop();
        i++;
      }
    }
    if (i < n) throw new Syntax('unexpected text after the value', i);
  } catch (err) {
    if (err instanceof Refused) return { ok: false, problem: err.problem };
    if (err instanceof Syntax) {
      const offset = new TextEncoder().encode(text.slice(0, err.index)).length;
      return { ok: false, problem: { kind: 'syntax', message: err.message, offset } };
    }
    throw err;
  }
  return { ok: true, value: JSON.parse(text), nodes, depth };
}
