/**
 * Stand-ins for the values only ledger_append knows (sequence, aggregate version, previous and
 * event hash), so that what a write answers can be written before its append has run: the stored
 * idempotency response goes to the database with the append and COMMIT in one flight, and the
 * database swaps each stand-in for its value (fill_stand_ins, drizzle/0017); the response sent is
 * the same text with the same swaps made here.
 *
 * A stand-in has the shape of the value it stands for (a 16-digit safe integer, `sha256:` and 64
 * hex digits), so a body holding stand-ins passes its operation's output schema, and it is random
 * (crypto), so no text a client sends can contain one.
 */
import { randomFillSync } from 'node:crypto';

// Per event, a stand-in for each of aggregateVersion, previousHash, sequence and eventHash, in
// that order (SEALED_FIELDS order, as server/domain/idempotency.ts's store reads the values).

const HASH_BYTES = 32;
// 6 random bytes, scaled into [10^15, 9 × 10^15): always 16 digits, always a safe integer.
const INT_BYTES = 6;

const EVENT_BYTES = 2 * INT_BYTES + 2 * HASH_BYTES;

// Random bytes for 64 events at a time: a call into the random generator for each event's 76 bytes
// cost ~10 µs of a write's CPU (a system call behind Next's wrapper of node:crypto). The bytes are
// turned into numbers and text at once, so the buffer is refilled in place.
const pool = Buffer.alloc(64 * EVENT_BYTES);
let taken = pool.length;

/** Stand-ins for one event, in SEALED_FIELDS order: numbers for the integers, strings for the hashes. */
export function makeStandIns(): [number, string, number, string] {
  if (taken === pool.length) {
    randomFillSync(pool);
    taken = 0;
  }
  const at = taken;
  taken += EVENT_BYTES;
  const int = (from: number) => 1e15 + Math.floor((pool.readUIntBE(at + from, INT_BYTES) / 2 ** 48) * 8e15);
  const hash = (from: number) => `sha256:${pool.toString('hex', at + from, at + from + HASH_BYTES)}`;
  return [int(0), hash(2 * INT_BYTES), int(INT_BYTES), hash(2 * INT_BYTES + HASH_BYTES)];
}

/** `text` with every stand-in replaced by its value, in order (as fill_stand_ins does). */
export function fillText(text: string, standIns: readonly string[], values: readonly string[]): string {
  let out = text;
  for (let i = 0; i < standIns.length; i++) if (out.includes(standIns[i]!)) out = out.replaceAll(standIns[i]!, values[i]!);
  return out;
}

/**
 * Replaces, in place, every stand-in found as a value in `value` (objects and arrays, however
 * deep) by its sealed value: numbers for numeric stand-ins, strings for the hashes.
 */
export function fillValue(value: unknown, sealed: ReadonlyMap<string | number, string | number>): void {
  if (typeof value !== 'object' || value === null) return;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const member = record[key];
    if (typeof member === 'object') fillValue(member, sealed);
    else if (typeof member === 'number' || typeof member === 'string') {
      const filled = sealed.get(member);
      if (filled !== undefined) record[key] = filled;
    }
  }
}
