/**
 * RFC 8785 (JSON Canonicalization Scheme) and the digests built on it: `payloadDigest` and
 * `eventHash` are `sha256:` + hex SHA-256 of the JCS form, so any JCS implementation can check them.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

export type Sha256 = `sha256:${string}`;

/** The JCS form of a JSON value. Throws on values JSON cannot carry (undefined at top level, NaN, Infinity). */
export function canonicalJson(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new TypeError('value has no JSON form');
  return out;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
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
  const { eventHash: _ignored, ...hashed } = event;
  return digestOf(hashed);
}

// The three values filled in under the lock, in the order their keys sort.
const SLOTS = ['aggregateVersion', 'previousHash', 'sequence'] as const;

/**
 * The canonical form of the event minus `eventHash`, cut into four segments around
 * aggregateVersion, previousHash and sequence, so that the database can finish the hash under
 * the append lock: hash = sha256(s0 + version + s1 + previousHash + s2 + sequence + s3).
 * `previousHash` is a plain `sha256:<hex>` string, so its quotes are kept in the segments.
 */
export function eventCanonicalSegments(event: UnsealedEvent): [string, string, string, string] {
  const fields: Record<string, unknown> = { ...event };
  for (const slot of SLOTS) delete fields[slot];
  delete fields.eventHash;
  // JCS sorts object keys by UTF-16 code units; every key here is ASCII.
  const keys = [...Object.keys(fields), ...SLOTS].sort();
  const segments: string[] = [];
  let current = '{';
  keys.forEach((key, i) => {
    if (i > 0) current += ',';
    current += `${JSON.stringify(key)}:`;
    if ((SLOTS as readonly string[]).includes(key)) {
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
  if (segments.length !== 4) throw new Error('event canonical form must have exactly four segments');
  return segments as [string, string, string, string];
}

/** Joins the segments as the database does (used by tests to hold both sides to one definition). */
export function joinCanonicalSegments(
  segments: readonly [string, string, string, string],
  aggregateVersion: number,
  previousHash: string,
  sequence: number,
): string {
  return `${segments[0]}${aggregateVersion}${segments[1]}${previousHash}${segments[2]}${sequence}${segments[3]}`;
}
