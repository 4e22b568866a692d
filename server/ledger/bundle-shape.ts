/**
 * What a ledger bundle must look like (docs/verification.md, "Offline proof"), checked by hand rather than with
 * a schema library: the same check runs where a whole bundle is in memory (bundle.ts) and in the
 * worker threads that check a streamed bundle's events batch by batch (bundle-file.ts), which load
 * nothing but the verifier. Both name the first problem in the same words.
 */
import type { LedgerEvent } from './canonical';

export const BUNDLE_FORMAT = 'aws-ledger-bundle/1';

/** A head as a bundle records it (its own, and the earlier export's). */
export interface BundleHead {
  sequence: number;
  headHash: string;
}

/**
 * The signed checkpoint of the tree at a bundle's head (docs/verification.md, "Offline proof"): the note, the
 * workspace's verifier keys, and the Merkle subtrees of the events before the bundle's `from`
 * (one per bit of `from.sequence`, largest first, standard base64; none for a whole chain), so
 * that the root over the bundle's events can be computed and compared with the signed one.
 */
export interface BundleCheckpoint {
  note: string;
  vkeys: string[];
  subtrees: string[];
}

/** A bundle's members other than its events. */
export interface BundleFrame {
  format: typeof BUNDLE_FORMAT;
  workspaceId: string;
  exportedAt: string;
  from: { sequence: number; hash: string };
  head: BundleHead;
  previous: BundleHead | null;
  /** Absent in bundles exported before checkpoints; null when the workspace had none to give. */
  checkpoint?: BundleCheckpoint | null;
}

export interface LedgerBundle extends BundleFrame {
  events: LedgerEvent[];
}

type Check = (value: unknown) => string | null;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const string: Check = (v) => (typeof v === 'string' ? null : 'expected a string');
const whole: Check = (v) => (Number.isSafeInteger(v) ? null : 'expected a whole number');
const count: Check = (v) => (Number.isSafeInteger(v) && (v as number) >= 0 ? null : 'expected a whole number, 0 or more');
const positive: Check = (v) => (Number.isSafeInteger(v) && (v as number) > 0 ? null : 'expected a whole number, 1 or more');
const object: Check = (v) => (isRecord(v) ? null : 'expected an object');
const strings: Check = (v) => (Array.isArray(v) && v.every((s) => typeof s === 'string') ? null : 'expected an array of strings');

/** Members a bundle may leave out (it was exported before they were added). */
const OPTIONAL = new Set(['checkpoint']);

/** The first problem of `value` against `fields` (every one required but OPTIONAL's, no other key), as "path: problem". */
function checkObject(value: unknown, fields: Record<string, Check>, path: string): string | null {
  const at = (key: string) => (path ? `${path}.${key}` : key);
  if (!isRecord(value)) return `${path || 'bundle'}: expected an object`;
  for (const key in fields) {
    if (!Object.hasOwn(value, key)) {
      if (OPTIONAL.has(at(key))) continue;
      return `${at(key)}: missing`;
    }
    const problem = fields[key]!(value[key]);
    if (problem) return problem.includes(': ') ? problem : `${at(key)}: ${problem}`;
  }
  for (const key of Object.keys(value)) if (!Object.hasOwn(fields, key)) return `${at(key)}: not a member of a bundle`;
  return null;
}

const headFields = { sequence: count, headHash: string };
const EVENT_FIELDS: Record<keyof LedgerEvent, Check> = {
  id: string,
  workspaceId: string,
  sequence: positive,
  ownerId: string,
  aggregateType: string,
  aggregateId: string,
  aggregateVersion: whole,
  eventType: string,
  schemaVersion: whole,
  actorType: string,
  actorId: string,
  // Taken as parsed and hashed as it is: rebuilding it could change what is hashed.
  payload: object,
  payloadDigest: string,
  occurredAtCanonical: string,
  idempotencyKey: (v) => (v === null ? null : string(v)),
  causationId: string,
  correlationId: string,
  contextManifestDigest: string,
  previousHash: string,
  eventHash: string,
};

const FRAME_FIELDS: Record<keyof BundleFrame, Check> = {
  format: (v) => (v === BUNDLE_FORMAT ? null : `expected "${BUNDLE_FORMAT}"`),
  workspaceId: string,
  exportedAt: string,
  from: (v) => checkObject(v, { sequence: count, hash: string }, 'from'),
  head: (v) => checkObject(v, headFields, 'head'),
  previous: (v) => (v === null ? null : checkObject(v, headFields, 'previous')),
  checkpoint: (v) => (v === null ? null : checkObject(v, { note: string, vkeys: strings, subtrees: strings }, 'checkpoint')),
};

/** The first problem of the event at `events[index]`, or null when it is an event. */
export function eventProblem(value: unknown, index: number): string | null {
  return checkObject(value, EVENT_FIELDS, `events[${index}]`);
}

/** The first problem of a bundle's members other than `events` (which must be there), or null. */
export function frameProblem(members: Record<string, unknown>): string | null {
  return checkObject(members, { ...FRAME_FIELDS, events: () => null }, '');
}

/** The first problem of a whole bundle in memory, or null when it is one. */
export function bundleProblem(value: unknown): string | null {
  if (!isRecord(value)) return 'bundle: expected an object';
  const frame = frameProblem(value);
  if (frame) return frame;
  const events = value.events;
  if (!Array.isArray(events)) return 'events: expected an array';
  for (let i = 0; i < events.length; i++) {
    const problem = eventProblem(events[i], i);
    if (problem) return problem;
  }
  return null;
}
