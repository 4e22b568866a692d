/**
 * Idempotency records (CONTRACT §3). The key is claimed at the start of the write's transaction
 * and its response stored before commit, so a failed request leaves no record, a concurrent
 * request with the same key waits for the first one's outcome, and a committed record always
 * carries its response.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { compiled } from '@/db/compiled';
import { idempotencyRecords } from '@/db/schema';
import { AppError, isLockTimeout } from '@/server/errors';

export type Claim = { claimed: true } | { claimed: false; status: number; body: unknown };

/**
 * Claims `key` for this request, or returns the stored response of the earlier request with the
 * same key and fingerprint. A different fingerprint is 422 idempotency_conflict. An expired record
 * is taken over as if absent.
 */
export async function claimIdempotencyKey(tx: Tx, workspaceId: string, key: string, fingerprint: string, ttlHours: number): Promise<Claim> {
  let inserted: unknown[];
  try {
    inserted = await claimStatement(tx, { workspaceId, key, fingerprint, ttlHours });
  } catch (err) {
    // Another transaction holds this key for longer than the lock timeout: it is still working.
    if (isLockTimeout(err)) throw new AppError('idempotency_in_progress');
    throw err;
  }
  if (inserted.length > 0) return { claimed: true };

  const [record] = await tx
    .select({
      fingerprint: idempotencyRecords.fingerprint,
      status: idempotencyRecords.responseStatus,
      body: idempotencyRecords.responseBody,
    })
    .from(idempotencyRecords)
    .where(and(eq(idempotencyRecords.workspaceId, workspaceId), eq(idempotencyRecords.key, key)));
  if (!record || record.status === null) throw new AppError('idempotency_in_progress');
  if (record.fingerprint !== fingerprint) {
    throw new AppError(
      'idempotency_conflict',
      'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
    );
  }
  return { claimed: false, status: record.status, body: record.body };
}

export async function storeIdempotentResponse(tx: Tx, workspaceId: string, key: string, status: number, body: unknown): Promise<void> {
  await storeStatement(tx, { workspaceId, key, status, body });
}

// Both run on every write: built once (db/compiled.ts).
const claimStatement = compiled<{ workspaceId: string; key: string; fingerprint: string; ttlHours: number }>((tx, p) => {
  const expiresAt = sql`now() + make_interval(hours => ${p('ttlHours')})`;
  return tx
    .insert(idempotencyRecords)
    .values({ workspaceId: p('workspaceId'), key: p('key'), fingerprint: p('fingerprint'), expiresAt })
    .onConflictDoUpdate({
      target: [idempotencyRecords.workspaceId, idempotencyRecords.key],
      set: { fingerprint: sql`${p('fingerprint')}`, responseStatus: null, responseBody: null, createdAt: sql`now()`, expiresAt },
      setWhere: sql`${idempotencyRecords.expiresAt} < now()`,
    })
    .returning({ key: idempotencyRecords.key });
});

const storeStatement = compiled<{ workspaceId: string; key: string; status: number; body: unknown }>((tx, p) =>
  tx
    .update(idempotencyRecords)
    .set({ responseStatus: sql`${p('status')}`, responseBody: p('body') })
    .where(and(eq(idempotencyRecords.workspaceId, p('workspaceId')), eq(idempotencyRecords.key, p('key')))),
);
