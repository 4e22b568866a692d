/**
 * The `# →` lines of the README and the guides in docs/: what a reader should see come back, written for people, and checked
 * by e2e/readme.spec.ts against what really comes back (so an example that drifts fails CI).
 *
 * A sketch is an optional HTTP status, then either
 * - JSON with ellipses: `…` as an object member means "and other members" (objects always match
 *   partially, so it is only for the reader), `…` as an array element means "and other elements"
 *   (the elements shown appear in this order; without it the array has exactly those), `{…}` and
 *   `[…]` are any object and any array, and inside a string `…` matches any characters
 *   (`"sha256:…"`, `"…"`); everything else must be equal; or
 * - text lines (anything not starting with `{` or `[`), each a pattern where `…` matches any
 *   characters, found in the output in this order (event-stream frames, command output).
 */

export interface Sketch {
  status: number | null;
  kind: 'json' | 'text';
  /** For json: the parsed sketch, ellipses as ELLIPSIS. For text: the line patterns. */
  value: unknown;
}

const ELLIPSIS = '\u0000…';

/** Parses a sketch's text (the `# →` line and its continuation lines, comment marks removed). */
export function parseSketch(text: string): Sketch {
  let rest = text.trim();
  let status: number | null = null;
  const statusMatch = /^([1-5]\d\d)(?:\s+|$)/.exec(rest);
  if (statusMatch) {
    status = Number(statusMatch[1]);
    rest = rest.slice(statusMatch[0].length);
  }
  if (rest.startsWith('{') || rest.startsWith('[')) {
    try {
      return { status, kind: 'json', value: JSON.parse(withEllipses(rest)) };
    } catch (err) {
      throw new Error(`a # → sketch is not JSON with ellipses: ${(err as Error).message}\n${rest}`);
    }
  }
  return { status, kind: 'text', value: rest.split('\n').map((l) => l.trim()) };
}

/** Turns bare `…` tokens into JSON: a member `"\0…":null` in an object, an element `"\0…"` elsewhere. */
function withEllipses(text: string): string {
  let out = '';
  let inString = false;
  const stack: string[] = [];
  let last = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') stack.push(c);
    else if (c === '}' || c === ']') stack.pop();
    if (c === '…') {
      const member = stack[stack.length - 1] === '{' && (last === '{' || last === ',');
      // The sentinel written as a JSON escape: JSON text may not hold a raw control character.
      out += member ? '"\\u0000…":null' : '"\\u0000…"';
    } else out += c;
    if (!/\s/.test(c)) last = c;
  }
  return out;
}

/** Where `actual` differs from the sketch, as readable lines (empty when it matches). */
export function mismatches(sketch: Sketch, actual: { status: number | null; output: string }): string[] {
  const problems: string[] = [];
  if (sketch.status !== null && actual.status !== sketch.status) problems.push(`status: expected ${sketch.status}, got ${actual.status}`);
  if (sketch.kind === 'text') {
    const lines = actual.output.split('\n');
    let at = 0;
    for (const pattern of sketch.value as string[]) {
      const re = globRegExp(pattern);
      while (at < lines.length && !re.test(lines[at]!.trim())) at++;
      if (at === lines.length) {
        problems.push(`no line like ${JSON.stringify(pattern)} (in order) in the output`);
        break;
      }
      at++;
    }
    return problems;
  }
  const json = lastJson(actual.output);
  if (json === undefined) return [...problems, 'no JSON document in the output'];
  compare(sketch.value, json.value, '$', problems);
  return problems;
}

/** The last line of the output that is a JSON object or array (the API answers in one line). */
function lastJson(output: string): { value: unknown } | undefined {
  const lines = output.split('\n').reverse();
  for (const line of lines) {
    const t = line.trim();
    if (!t.startsWith('{') && !t.startsWith('[')) continue;
    try {
      return { value: JSON.parse(t) };
    } catch {
      continue;
    }
  }
  return undefined;
}

function globRegExp(pattern: string): RegExp {
  const parts = pattern.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`, 's');
}

function compare(expected: unknown, actual: unknown, path: string, problems: string[]): void {
  if (expected === ELLIPSIS) return;
  if (typeof expected === 'string') {
    const ok = typeof actual === 'string' && (expected.includes('…') ? globRegExp(expected).test(actual) : actual === expected);
    if (!ok) problems.push(`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
    return;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return void problems.push(`${path}: expected an array, got ${JSON.stringify(actual)}`);
    const shown = expected.filter((e) => e !== ELLIPSIS);
    if (shown.length === expected.length) {
      if (actual.length !== expected.length) problems.push(`${path}: expected ${expected.length} elements, got ${actual.length}`);
      else expected.forEach((e, i) => compare(e, actual[i], `${path}[${i}]`, problems));
      return;
    }
    // Elements shown, in order, among others.
    let at = 0;
    for (const e of shown) {
      while (at < actual.length && collect(e, actual[at], path).length > 0) at++;
      if (at === actual.length) return void problems.push(`${path}: no element like ${JSON.stringify(e)} (in order)`);
      at++;
    }
    return;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) {
      return void problems.push(`${path}: expected an object, got ${JSON.stringify(actual)}`);
    }
    for (const [key, value] of Object.entries(expected)) {
      if (key === ELLIPSIS) continue;
      if (!(key in actual)) problems.push(`${path}.${key}: missing`);
      else compare(value, (actual as Record<string, unknown>)[key], `${path}.${key}`, problems);
    }
    return;
  }
  if (expected !== actual) problems.push(`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

function collect(expected: unknown, actual: unknown, path: string): string[] {
  const problems: string[] = [];
  compare(expected, actual, path, problems);
  return problems;
}
