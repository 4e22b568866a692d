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
  return createHmac('sha256', secret)
    .update(`${VERSION}|${workspaceId}|${sequence}`)
    .digest()
    .subarray(0, MAC_BYTES);
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
