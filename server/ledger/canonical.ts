/**
 * RFC 8785 (JSON Canonicalization Scheme) and the digests built on it: `payloadDigest` and
 * `eventHash` are `sha256:` + hex SHA-256 of the JCS form, so any JCS implementation can check them.
 */
import crypto from 'node:crypto';

export type Sha256 = `sha256:${string}`;

/**
 * Quoted object keys, kept because the same few dozen keys recur in every event and payload
 * (bounded, in case a payload brings endless new ones).
 */
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 10_000;

function quoteKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/**
 * Sorted key lists by the key list as it came: objects of one kind come with one key order, so
 * most objects are sorted once per process. An entry is found by the first key and the count, and
 * taken only when every key matches in place (property names are interned strings, so each
 * comparison is cheap); no string is built to look it up.
 */
interface Shape {
  keys: string[];
  sorted: string[];
}
const shapesByFirstKey = new Map<string, Shape[]>();
let shapeCount = 0;
const MAX_SHAPES = 10_000;
/** Shapes kept per first key: a lookup never scans more (payloads could bring endless shapes). */
const MAX_SHAPES_PER_KEY = 16;

function sameKeys(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  if (keys.length < 2) return keys;
  const candidates = shapesByFirstKey.get(keys[0]!);
  if (candidates) for (const shape of candidates) if (sameKeys(shape.keys, keys)) return shape.sorted;
  const sorted = [...keys].sort();
  if (shapeCount < MAX_SHAPES && (candidates?.length ?? 0) < MAX_SHAPES_PER_KEY) {
    shapeCount++;
    if (candidates) candidates.push({ keys, sorted });
    else shapesByFirstKey.set(keys[0]!, [{ keys, sorted }]);
  }
  return sorted;
}

/**
 * Characters JSON.stringify escapes (quote, backslash, controls) or rewrites (lone surrogates).
 * Most strings of an event (ids, hashes, names) have none, and quoting them by hand costs less
 * than half of a JSON.stringify call, which verification makes for every string it hashes.
 * (Finding control characters is the point, hence the lint exception.)
 */
// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

function quote(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : '"' + text + '"';
}

/**
 * RFC 8785 serialisation. Strings and numbers are written as JSON.stringify writes them, which is
 * exactly JCS's (ECMAScript number formatting; only quote, backslash and control characters
 * escaped); object keys are sorted by UTF-16 code units (Array.prototype.sort's default order).
 * The same results as the `canonicalize` package (the tests hold the two together), written for
 * speed: verification runs it over every event of a chain, and the append over every new one.
 */
function serialize(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
      if (Number.isNaN(value)) throw new TypeError('NaN is not allowed');
      if (!Number.isFinite(value)) throw new TypeError('Infinity is not allowed');
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ',';
          out += serialize(value[i]) ?? 'null';
        }
        return out + ']';
      }
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') return serialize(toJSON.call(value));
      const record = value as Record<string, unknown>;
      const keys = sortedKeys(record);
      let out = '{';
      let first = true;
      for (const key of keys) {
        const member = serialize(record[key]);
        if (member === undefined) continue;
        out += first ? quoteKey(key) : ',' + quoteKey(key);
        out += ':' + member;
        first = false;
      }
      return out + '}';
    }
    case 'bigint':
      throw new TypeError('BigInt has no JSON form');
    default:
      // undefined, functions and symbols: left out of objects, null in arrays, as in JSON.
      return undefined;
  }
}

/** The JCS form of a JSON value. Throws on values JSON cannot carry (undefined at top level, NaN, Infinity). */
export function canonicalJson(value: unknown): string {
  const out = serialize(value);
  if (out === undefined) throw new TypeError('value has no JSON form');
  return out;
}

// One-shot hashing (Node ≥ 20.12) avoids building a Hash object per digest.
const oneShotHash = (crypto as unknown as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

export function sha256Hex(text: string): string {
  return oneShotHash ? oneShotHash('sha256', text, 'hex') : crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

/** `sha256:` + hex SHA-256 of the canonical form of `value`. */
export function digestOf(value: unknown): Sha256 {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}

/** A ledger event as stored, served and hashed. */
export interface LedgerEvent {
  id: string;
  workspaceId: string;
  sequence: number;
  ownerId: string;
  aggregateType: string;
  aggregateId: string;
  aggregateVersion: number;
  eventType: string;
  schemaVersion: number;
  actorType: 'api_key' | 'human' | 'system';
  actorId: string;
  payload: Record<string, unknown>;
  payloadDigest: Sha256 | string;
  occurredAtCanonical: string;
  idempotencyKey: string | null;
  causationId: string;
  correlationId: string;
  contextManifestDigest: string;
  previousHash: string;
  eventHash: string;
}

/** The fields fixed before the append; only the lock holder knows the other three. */
export type UnsealedEvent = Omit<LedgerEvent, 'aggregateVersion' | 'previousHash' | 'sequence' | 'eventHash'>;

/** The hash of an event: over every field but `eventHash` itself. */
export function eventHashOf(event: Omit<LedgerEvent, 'eventHash'> & { eventHash?: string }): Sha256 {
  return `sha256:${sha256Hex(eventCanonicalText(event))}`;
}

/**
 * The canonical form of an event without its `eventHash`. `payloadText`, when the caller has
 * already serialised the payload (the verifier does, for its digest), is used as is instead of
 * serialising the payload a second time.
 */
export function eventCanonicalText(event: Omit<LedgerEvent, 'eventHash'> & { eventHash?: string }, payloadText?: string): string {
  const record = event as unknown as Record<string, unknown>;
  const keys = sortedKeys(record);
  let out = '{';
  let first = true;
  for (const key of keys) {
    if (key === 'eventHash') continue;
    const member = key === 'payload' && payloadText !== undefined ? payloadText : serialize(record[key]);
    if (member === undefined) continue;
    out += first ? quoteKey(key) : ',' + quoteKey(key);
    out += ':' + member;
    first = false;
  }
  return out + '}';
}

const quoteOrNull = (text: string | null) => (text === null ? 'null' : quote(text));

/**
 * eventCanonicalText for an event of exactly LedgerEvent's fields, as every stored and bundled
 * event is (bundle-shape.ts refuses any other key), around the payload's canonical text: the keys
 * written out in the order JCS sorts them, so no key list is looked up or sorted and no value is
 * dispatched on its type. Verification builds it for every event (the tests hold it to the generic form).
 */
export function ledgerEventCanonicalText(e: Omit<LedgerEvent, 'eventHash' | 'payload'>, payloadText: string): string {
  return (
    `{"actorId":${quote(e.actorId)},"actorType":${quote(e.actorType)},"aggregateId":${quote(e.aggregateId)}` +
    `,"aggregateType":${quote(e.aggregateType)},"aggregateVersion":${JSON.stringify(e.aggregateVersion)}` +
    `,"causationId":${quote(e.causationId)},"contextManifestDigest":${quote(e.contextManifestDigest)}` +
    `,"correlationId":${quote(e.correlationId)},"eventType":${quote(e.eventType)},"id":${quote(e.id)}` +
    `,"idempotencyKey":${quoteOrNull(e.idempotencyKey)},"occurredAtCanonical":${quote(e.occurredAtCanonical)}` +
    `,"ownerId":${quote(e.ownerId)},"payload":${payloadText},"payloadDigest":${quote(e.payloadDigest)}` +
    `,"previousHash":${quote(e.previousHash)},"schemaVersion":${JSON.stringify(e.schemaVersion)}` +
    `,"sequence":${JSON.stringify(e.sequence)},"workspaceId":${quote(e.workspaceId)}}`
  );
}

// The values the segments are cut around, in the order their keys sort: the three filled in
// under the lock, and the payload, which the database keeps as its own text (payload_text).
const CUTS = ['aggregateVersion', 'payload', 'previousHash', 'sequence'] as const;

/** An event's canonical form cut for ledger_append: five segments, and the payload's canonical text between the second and third. */
export interface CanonicalSegments {
  segments: [string, string, string, string, string];
  payloadText: string;
}

/**
 * The canonical form of the event minus `eventHash`, cut into five segments around
 * aggregateVersion, the payload, previousHash and sequence, so that the database can finish the
 * hash under the append lock and keep the payload's exact canonical text (what its digest and
 * the event's hash were computed over: verification then hashes that text as it is):
 * hash = sha256(s0 + version + s1 + payloadText + s2 + previousHash + s3 + sequence + s4).
 * `previousHash` is a plain `sha256:<hex>` string, so its quotes are kept in the segments.
 */
export function eventCanonicalSegments(event: UnsealedEvent): CanonicalSegments {
  const fields: Record<string, unknown> = { ...event };
  for (const cut of CUTS) delete fields[cut];
  delete fields.eventHash;
  // JCS sorts object keys by UTF-16 code units; every key here is ASCII.
  const keys = [...Object.keys(fields), ...CUTS].sort();
  const segments: string[] = [];
  let current = '{';
  keys.forEach((key, i) => {
    if (i > 0) current += ',';
    current += `${quoteKey(key)}:`;
    if ((CUTS as readonly string[]).includes(key)) {
      if (key === 'previousHash') {
        segments.push(current + '"');
        current = '"';
      } else {
        segments.push(current);
        current = '';
      }
    } else {
      current += canonicalJson(fields[key]);
    }
  });
  segments.push(current + '}');
  if (segments.length !== 5) throw new Error('event canonical form must have exactly five segments');
  return { segments: segments as CanonicalSegments['segments'], payloadText: canonicalJson(event.payload) };
}

/** Joins the segments as the database does (used by tests to hold both sides to one definition). */
export function joinCanonicalSegments(cut: CanonicalSegments, aggregateVersion: number, previousHash: string, sequence: number): string {
  const [s0, s1, s2, s3, s4] = cut.segments;
  return `${s0}${aggregateVersion}${s1}${cut.payloadText}${s2}${previousHash}${s3}${sequence}${s4}`;
}
