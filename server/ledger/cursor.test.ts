import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from './cursor';

const secret = 'test-secret-for-cursors-0123456789';

describe('event cursors', () => {
  it('round-trip any position', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (ws, seq) => {
        const cursor = encodeCursor(secret, ws, seq);
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeCursor(secret, ws, cursor)).toEqual({ sequence: seq });
      }),
    );
  });

  it('are refused for another workspace', () => {
    const cursor = encodeCursor(secret, randomUUID(), 10);
    expect(decodeCursor(secret, randomUUID(), cursor)).toBeNull();
  });

  it('are refused when signed with another secret', () => {
    const ws = randomUUID();
    expect(decodeCursor('another-secret', ws, encodeCursor(secret, ws, 3))).toBeNull();
  });

  it('are refused when the position is edited', () => {
    const ws = randomUUID();
    const raw = Buffer.from(encodeCursor(secret, ws, 5), 'base64url');
    const forged = Buffer.concat([Buffer.from('c1.6.'), raw.subarray(5)]).toString('base64url');
    expect(decodeCursor(secret, ws, forged)).toBeNull();
  });

  it('refuse garbage without throwing', () => {
    const ws = randomUUID();
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        expect(decodeCursor(secret, ws, s)).toBeNull();
      }),
    );
    for (const s of ['', '!!!', 'YzEuNS4', 'x'.repeat(500), Buffer.from('c1.-1.').toString('base64url')]) {
      expect(decodeCursor(secret, ws, s)).toBeNull();
    }
  });
});

describe('keyset cursors', () => {
  it('round-trip and refuse another scope, an edited payload or garbage', async () => {
    const { encodeKeysetCursor, decodeKeysetCursor } = await import('./cursor');
    const cursor = encodeKeysetCursor(secret, 'decisions|ws-a', ['2026-11-20T10:00:00.000Z', 'id-1']);
    expect(decodeKeysetCursor(secret, 'decisions|ws-a', cursor, 2)).toEqual(['2026-11-20T10:00:00.000Z', 'id-1']);
    expect(decodeKeysetCursor(secret, 'decisions|ws-b', cursor, 2)).toBeNull();
    expect(decodeKeysetCursor(secret, 'decisions|ws-a', cursor, 3)).toBeNull();
    const [, sig] = cursor.split('.');
    const edited = `${Buffer.from(JSON.stringify(['2030-01-01T00:00:00.000Z', 'id-1'])).toString('base64url')}.${sig}`;
    expect(decodeKeysetCursor(secret, 'decisions|ws-a', edited, 2)).toBeNull();
    for (const s of ['', 'a.b', 'no-dot', '.', 'x'.repeat(600)]) expect(decodeKeysetCursor(secret, 'decisions|ws-a', s, 2)).toBeNull();
  });
});
