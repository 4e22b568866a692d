/** Reading JSON text strictly: UTF-8, and no ambiguous or over-deep structure. */

/** UTF-8 text of `bytes`, or null when they are not valid UTF-8. */
export function utf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** How deep a request body may nest, counting the body itself (the receipt reader's limit too). */
const MAX_JSON_DEPTH = 64;

/** An open object (its member names so far) or array (its current index), while scanning. */
interface Frame {
  /** Member names of an object; null for an array. */
  names: string[] | null;
  /** The names again, once there are enough of them for a set to beat a scan. */
  set: Set<string> | null;
  index: number;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The dotted path of the innermost open container (`state.list.3`), cut at 200 characters. */
function pathOf(frames: Frame[]): string {
  // Each container sits under its parent's current member name or index.
  const parts = frames.slice(0, -1).map((parent) => (parent.names ? (parent.names[parent.names.length - 1] ?? '') : String(parent.index)));
  const path = parts.join('.');
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

const where = (frames: Frame[]) => (frames.length > 1 ? ` (in ${pathOf(frames)})` : '');

/**
 * Why a JSON text is ambiguous or too deep for the API, or null when it is neither:
 *
 * - a member name repeated in one object (RFC 7493, I-JSON: names MUST be unique). JSON.parse
 *   keeps the last one silently, so `{"title":"a","title":"b"}` would mean one thing here and
 *   another to a client, a proxy or a log reader, and idempotency fingerprints and hash-chained
 *   payloads would be computed over a value the sender never wrote;
 * - nesting deeper than `maxDepth`: recursive code further on (JSON.stringify, the canonical form
 *   hashed into the ledger, PostgreSQL's jsonb) overflows its stack on deep input (a checkpoint
 *   state 5,000 levels deep was a 500), and no operation needs more than a few levels.
 *
 * A member named `__proto__` is not refused: JSON.parse keeps it as data, closed bodies refuse it
 * as an unknown field, and free-form objects keep it (schemas.ts, jsonObject).
 *
 * One pass, before JSON.parse, with an explicit stack: strings are skipped with indexOf, so the
 * cost is linear in the text and a hostile body stops at the first problem (a 1 MiB run of `[`
 * stops at byte 65). Text that is not JSON at all may pass or be refused here; JSON.parse judges
 * it next either way.
 */
export function jsonStructureProblem(text: string, maxDepth = MAX_JSON_DEPTH): string | null {
  const frames: Frame[] = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: its closing quote is the first one not escaped by an odd run of backslashes.
      const start = i + 1;
      let end = text.indexOf('"', start);
      for (;;) {
        if (end < 0) return null; // unterminated: JSON.parse reports it
        let k = end - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        if ((end - 1 - k) % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      i = end;
      const top = frames[frames.length - 1];
      if (!top?.names) continue;
      // In an object, a string followed by ':' is a member name.
      let j = end + 1;
      while (j < n && isSpace(text.charCodeAt(j))) j++;
      if (text.charCodeAt(j) !== 0x3a) continue;
      let name = text.slice(start, end);
      if (name.includes('\\')) {
        try {
          name = JSON.parse(text.slice(start - 1, end + 1)) as string;
        } catch {
          return null; // a bad escape: JSON.parse reports it
        }
      }
      // (The path is built only when there is something to say: for every name it would double the cost.)
      const seen = top.set ? top.set.has(name) : top.names.includes(name);
      if (seen) return `the member name ${JSON.stringify(name).slice(0, 120)} appears twice in one object${where(frames)}`;
      top.names.push(name);
      if (top.set) top.set.add(name);
      else if (top.names.length > 16) top.set = new Set(top.names);
      i = j;
    } else if (c === 0x7b || c === 0x5b) {
      if (frames.length >= maxDepth) return `nested deeper than ${maxDepth} levels${where(frames)}`;
      frames.push({ names: c === 0x7b ? [] : null, set: null, index: 0 });
    } else if (c === 0x7d || c === 0x5d) {
      frames.pop();
    } else if (c === 0x2c) {
      const top = frames[frames.length - 1];
      if (top && !top.names) top.index++;
    }
  }
  return null;
}
