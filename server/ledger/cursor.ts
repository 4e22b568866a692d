/**
 * Opaque cursors for the event stream. A cursor names a position (the sequence of the last event
 * the reader has) in one workspace, signed so that a forged cursor or another workspace's cursor
 * is refused instead of silently reading from the wrong place.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const VERSION = 'c1';
const MAC_BYTES = 12;

export interface CursorPosition {
  sequence: number;
}

function mac(secret: string, workspaceId: string, sequence: number): Buffer {
  return createHmac('sha256', secret).update(`${VERSION}|${workspaceId}|${sequence}`).digest().subarray(0, MAC_BYTES);
}

export function encodeCursor(secret: string, workspaceId: string, sequence: number): string {
  if (!Number.isSafeInteger(sequence) || sequence < 0) throw new RangeError('cursor sequence must be a non-negative integer');
  const body = Buffer.from(`${VERSION}.${sequence}.`, 'utf8');
  return Buffer.concat([body, mac(secret, workspaceId, sequence)]).toString('base64url');
}

/** The position a cursor names, or null when this service did not issue it for this workspace. */
export function decodeCursor(secret: string, workspaceId: string, cursor: string): CursorPosition | null {
  if (cursor.length === 0 || cursor.length > 128 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const raw = Buffer.from(cursor, 'base64url');
  if (raw.length <= MAC_BYTES) return null;
  const text = raw.subarray(0, raw.length - MAC_BYTES).toString('latin1');
  const match = /^c1\.(0|[1-9][0-9]{0,15})\.$/.exec(text);
  if (!match) return null;
  const sequence = Number(match[1]);
  if (!Number.isSafeInteger(sequence)) return null;
  const expected = mac(secret, workspaceId, sequence);
  const given = raw.subarray(raw.length - MAC_BYTES);
  if (!timingSafeEqual(expected, given)) return null;
  // Re-encoding must give back the same text: refuses non-canonical base64 spellings of one cursor.
  if (encodeCursor(secret, workspaceId, sequence) !== cursor) return null;
  return { sequence };
}

/**
 * Keyset cursors for lists other than the ledger (e.g. decisions by creation time): the last
 * row's sort values, signed for one scope (list + workspace) so they cannot be forged or reused
 * elsewhere.
 */
export function encodeKeysetCursor(secret: string, scope: string, values: readonly string[]): string {
  const payload = Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
  const signature = createHmac('sha256', secret).update(`k1|${scope}|${payload}`).digest().subarray(0, MAC_BYTES).toString('base64url');
  return `${payload}.${signature}`;
}

export function decodeKeysetCursor(secret: string, scope: string, cursor: string, arity: number): string[] | null {
  if (cursor.length > 512 || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const [payload, signature] = cursor.split('.') as [string, string];
  const expected = createHmac('sha256', secret).update(`k1|${scope}|${payload}`).digest().subarray(0, MAC_BYTES);
  // Compared as text: Buffer.from(…, 'base64url') ignores a trailing character that does not make a
  // whole byte, so a cursor with one character appended to its signature was accepted as issued.
  const given = Buffer.from(signature, 'latin1');
  const wanted = Buffer.from(expected.toString('base64url'), 'latin1');
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return null;
  try {
    const values: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!Array.isArray(values) || values.length !== arity || !values.every((v) => typeof v === 'string')) return null;
    return values as string[];
  } catch {
    return null;
  }
}
