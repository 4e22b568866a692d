/**
 * A strict JSON reader for documents from strangers (the public receipt validator). Unlike
 * JSON.parse it refuses duplicate object keys and `__proto__` keys, and it counts depth and nodes
 * as it goes with an explicit stack (never recursion), stopping at the first limit crossed, so a
 * hostile document costs at most the limits before any schema sees it.
 */

export interface StrictJsonLimits {
  maxDepth: number;
  maxNodes: number;
}

type StrictJsonError =
  | { kind: 'syntax'; message: string; offset: number }
  | { kind: 'duplicate_key' | 'forbidden_key'; message: string; path: string }
  | { kind: 'depth' | 'nodes'; message: string; path: string };

export type StrictJsonResult = { ok: true; value: unknown; depth: number; nodes: number } | { ok: false; error: StrictJsonError };

type Container =
  | { kind: 'object'; value: Record<string, unknown>; keys: Set<string>; key: string | null; path: string }
  | { kind: 'array'; value: unknown[]; path: string };

const pointerPart = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

class Syntax extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

export function parseStrictJson(text: string, limits: StrictJsonLimits): StrictJsonResult {
  let i = 0;
  let nodes = 0;
  let maxSeen = 0;
  const stack: Container[] = [];
  let root: unknown = undefined;
  let done = false;

  const ws = () => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  };
  const readString = (): string => {
    // Opening quote at i.
    let out = '';
    i++;
    let start = i;
    for (;;) {
      if (i >= text.length) throw new Syntax('unterminated string', i);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) throw new Syntax('control character in string', i);
      if (c === 0x5c) {
        out += text.slice(start, i);
        const e = text[i + 1];
        const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (e !== undefined && e in simple) {
          out += simple[e];
          i += 2;
        } else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
          out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
          i += 6;
        } else throw new Syntax('bad escape', i);
        start = i;
        continue;
      }
      i++;
    }
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const pathOf = (parent: Container | undefined, key: string | number) => (parent ? `${parent.path}/${pointerPart(String(key))}` : '');

  // Places a finished value into its parent (or as the root); returns the path it got.
  const place = (value: unknown): void => {
    const parent = stack[stack.length - 1];
    if (!parent) {
      root = value;
      done = true;
    } else if (parent.kind === 'array') parent.value.push(value);
    else {
      parent.value[parent.key!] = value;
      parent.key = null;
    }
  };
  const count = (path: string): StrictJsonError | null => {
    nodes++;
    if (nodes > limits.maxNodes) return { kind: 'nodes', message: `more than ${limits.maxNodes} nodes`, path };
    return null;
  };

  try {
    ws();
    for (;;) {
      const parent = stack[stack.length - 1];
      // Where the next value goes.
      if (parent?.kind === 'object' && parent.key === null) {
        ws();
        if (text[i] === '}') {
          i++;
          stack.pop();
          place(parent.value);
          if (done) break;
          continue;
        }
        if (parent.keys.size > 0) {
          if (text[i] !== ',') throw new Syntax("expected ',' or '}'", i);
          i++;
          ws();
        }
        if (text[i] !== '"') throw new Syntax('expected a key', i);
        const key = readString();
        const path = `${parent.path}/${pointerPart(key)}`;
        if (key === '__proto__') return { ok: false, error: { kind: 'forbidden_key', message: 'the key __proto__ is not allowed', path } };
        if (parent.keys.has(key))
          return { ok: false, error: { kind: 'duplicate_key', message: `duplicate key ${JSON.stringify(key)}`, path } };
        parent.keys.add(key);
        parent.key = key;
        ws();
        if (text[i] !== ':') throw new Syntax("expected ':'", i);
        i++;
      } else if (parent?.kind === 'array') {
        ws();
        if (text[i] === ']') {
          i++;
          stack.pop();
          place(parent.value);
          if (done) break;
          continue;
        }
        if (parent.value.length > 0) {
          if (text[i] !== ',') throw new Syntax("expected ',' or ']'", i);
          i++;
        }
      }
      ws();
      const here = stack[stack.length - 1];
      const path = pathOf(here, here?.kind === 'array' ? here.value.length : here?.kind === 'object' ? here.key! : '');
      const over = count(path);
      if (over) return { ok: false, error: over };
      const c = text[i];
      if (c === '{' || c === '[') {
        const depth = stack.length + 1;
        if (depth > limits.maxDepth) return { ok: false, error: { kind: 'depth', message: `deeper than ${limits.maxDepth} levels`, path } };
        maxSeen = Math.max(maxSeen, depth);
        i++;
        stack.push(
          c === '{'
            ? { kind: 'object', value: Object.create(null) as Record<string, unknown>, keys: new Set(), key: null, path }
            : { kind: 'array', value: [], path },
        );
        continue;
      }
      let value: unknown;
      if (c === '"') value = readString();
      else if (text.startsWith('true', i)) {
        value = true;
        i += 4;
      } else if (text.startsWith('false', i)) {
        value = false;
        i += 5;
      } else if (text.startsWith('null', i)) {
        value = null;
        i += 4;
      } else {
        NUMBER.lastIndex = i;
        const m = NUMBER.exec(text);
        if (!m || m[0].length === 0) throw new Syntax('unexpected character', i);
        value = Number(m[0]);
        i += m[0].length;
      }
      place(value);
      if (done) break;
    }
    ws();
    if (i !== text.length) throw new Syntax('unexpected text after the document', i);
  } catch (err) {
    if (err instanceof Syntax) return { ok: false, error: { kind: 'syntax', message: err.message, offset: err.offset } };
    throw err;
  }
  return { ok: true, value: toPlain(root), depth: maxSeen, nodes };
}

/** Objects were built without a prototype (so no key can reach one); give them a normal one back. */
function toPlain(value: unknown): unknown {
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const v = todo.pop();
    if (Array.isArray(v)) for (const x of v) todo.push(x);
    else if (v && typeof v === 'object') {
      Object.setPrototypeOf(v, Object.prototype);
      for (const x of Object.values(v)) todo.push(x);
    }
  }
  return value;
}
