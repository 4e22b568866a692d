/**
 * Idempotency records (docs/contract.md §3). The key is claimed at the start of the write's transaction
 * and its response stored before commit, so a failed request leaves no record, a concurrent
 * request with the same key waits for the first one's outcome, and a committed record always
 * carries its response.
 */
import { and, eq, sql } from 'drizzle-orm';
import { query, type Executor, type Tx } from '@/db';
import { compiled, compiledSql } from '@/db/compiled';
import { atCommit } from '@/db/connection';
import { idempotencyRecords } from '@/db/schema';
import { AppError, hasSqlState, isLockTimeout } from '@/server/errors';

/**
 * The claim found the key held by a committed request. The claim fails in the database (SQLSTATE
 * AW409, drizzle/0013), so its transaction is aborted: whatever was sent behind the claim did
 * nothing. Roll back, then read the stored response with `storedResponse`.
 */
export class IdempotencyKeyTaken extends Error {
  constructor() {
    super('idempotency key already used');
  }
}

/**
 * Claims `key` for this request; rejects with IdempotencyKeyTaken when a committed request holds
 * it. A request with the same key still in progress is waited for (the unique index makes this
 * claim wait for its outcome), up to the lock timeout: then 409 idempotency_in_progress. An expired
 * record is taken over as if absent.
 */
export async function claimIdempotencyKey(tx: Tx, workspaceId: string, key: string, fingerprint: string, ttlHours: number): Promise<void> {
  try {
    await claimStatement(tx, { workspaceId, key, fingerprint, ttlHours });
  } catch (err) {
    if (hasSqlState(err, 'AW409')) throw new IdempotencyKeyTaken();
    // Another transaction holds this key for longer than the lock timeout: it is still working.
    if (isLockTimeout(err)) throw new AppError('idempotency_in_progress');
    throw err;
  }
}

/**
 * The stored response of the earlier request with this key, after IdempotencyKeyTaken. A different
 * fingerprint is 422 idempotency_conflict; a record without a response (or none: it expired and was
 * removed since) is 409 idempotency_in_progress, which the client retries.
 */
export async function storedResponse(
  db: Executor,
  workspaceId: string,
  key: string,
  fingerprint: string,
): Promise<{ status: number; body: unknown }> {
  const [record] = await db
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
  return { status: record.status, body: record.body };
}

/**
 * Stores the response of the request holding `key`. `bodyText` is the body as JSON text: the same
 * text the response carries (server/api/mutation.ts), so a body is serialised once.
 */
export async function storeIdempotentResponse(tx: Tx, workspaceId: string, key: string, status: number, bodyText: string): Promise<void> {
  await storeStatement(tx, { workspaceId, key, status, body: bodyText });
}

/**
 * Stores the response of the request holding `key` when its transaction's append is left for
 * COMMIT (server/ledger/append.ts appendEventsAtCommit): `template` holds stand-ins for what the
 * append assigns, and the database swaps them for the values of the events `eventIds`, which the
 * append has written by then (fill_stand_ins, drizzle/0017). Left for COMMIT too, behind the
 * append, so the whole write after the service's work is one flight and the append lock is held
 * for no round trip.
 */
export function storeSealedResponseAtCommit(
  tx: Tx,
  workspaceId: string,
  key: string,
  status: number,
  template: string,
  sealing: { eventIds: string[]; standIns: string[] },
): void {
  atCommit(tx, () =>
    storeSealedStatement(tx, {
      workspaceId,
      key,
      status,
      template,
      standIns: JSON.stringify(sealing.standIns),
      eventIds: JSON.stringify(sealing.eventIds),
    }),
  );
}

// All three run on every write: built once (db/compiled.ts). The claim takes the key (a new record, or
// an expired one taken over) or, through idempotency_key_taken(), fails.
const claimStatement = compiled<{ workspaceId: string; key: string; fingerprint: string; ttlHours: number }>((tx, p) => {
  const expiresAt = sql`now() + make_interval(hours => ${p('ttlHours')})`;
  const claimed = tx.$with('claimed').as(
    tx
      .insert(idempotencyRecords)
      .values({ workspaceId: p('workspaceId'), key: p('key'), fingerprint: p('fingerprint'), expiresAt })
      .onConflictDoUpdate({
        target: [idempotencyRecords.workspaceId, idempotencyRecords.key],
        set: { fingerprint: sql`${p('fingerprint')}`, responseStatus: null, responseBody: null, createdAt: sql`now()`, expiresAt },
        setWhere: sql`${idempotencyRecords.expiresAt} < now()`,
      })
      .returning({ key: idempotencyRecords.key }),
  );
  return tx
    .with(claimed)
    .select({ claimed: sql<boolean>`case when count(*) > 0 then true else idempotency_key_taken() end` })
    .from(claimed);
});

// The values in SEALED_FIELDS order (server/ledger/stand-ins.ts), event by event in the order of
// `eventIds`; lists go in as JSON text, read back in order. Each event is read by its id, one
// index probe per id: `offset 0` keeps the lookup from being flattened into a join, which a
// cached generic plan made a hash join over a sequential scan of the whole ledger (the planner
// expects 100 ids from a JSON array), under the append lock.
const storeSealedStatement = compiledSql<{
  workspaceId: string;
  key: string;
  status: number;
  template: string;
  standIns: string;
  eventIds: string;
}>(
  (p) => sql`update idempotency_records set response_status = ${p('status')}, response_body = fill_stand_ins(
      ${p('template')}::text,
      array(select s from jsonb_array_elements_text(${p('standIns')}::jsonb) with ordinality as t(s, i) order by i),
      array(select v.value
              from jsonb_array_elements_text(${p('eventIds')}::jsonb) with ordinality as e(id, ord)
              cross join lateral (select l.aggregate_version, l.previous_hash, l.sequence, l.event_hash
                                    from ledger_events l where l.id = e.id::uuid offset 0) as l
              cross join lateral unnest(array[l.aggregate_version::text, l.previous_hash, l.sequence::text, l.event_hash])
                with ordinality as v(value, i)
             order by e.ord, v.i))::jsonb
    where workspace_id = ${p('workspaceId')} and key = ${p('key')}`,
);

// The body arrives as JSON text, so it is placed as it is (not through the jsonb column's encoder,
// which would serialise it again).
const storeStatement = compiled<{ workspaceId: string; key: string; status: number; body: string }>((tx, p) =>
  tx
    .update(idempotencyRecords)
    .set({ responseStatus: sql`${p('status')}`, responseBody: sql`${p('body')}` })
    .where(and(eq(idempotencyRecords.workspaceId, p('workspaceId')), eq(idempotencyRecords.key, p('key')))),
);

/**
 * Deletes up to `limit` expired records, oldest first (the retention job, server/retention.ts,
 * calls it until fewer come back). A record a request is taking over right now is locked by it and
 * skipped; one taken over before the delete reaches it is no longer expired and stays.
 */
export async function pruneExpiredIdempotencyRecords(db: Executor, now = new Date(), limit = 1000): Promise<number> {
  const [row] = await query<{ deleted: number | string }>(
    db,
    sql`with gone as (
          delete from idempotency_records where (workspace_id, key) in (
            select workspace_id, key from idempotency_records
             where expires_at < ${now.toISOString()}::timestamptz
             order by expires_at limit ${limit} for update skip locked)
            and expires_at < ${now.toISOString()}::timestamptz
          returning 1)
        select count(*) as deleted from gone`,
  );
  return Number(row?.deleted ?? 0);
}

/**
 * Claims the keys of a batch of requests (server/api/batch.ts) in one statement, and answers the
 * keys a committed request already holds. Unlike claimIdempotencyKey it does not fail on a taken key
 * (which would abort the batch's transaction for every request in it): a taken key is simply not
 * claimed, and its request replays. A key another transaction holds in progress is waited for, as
 * one claim does. The batch holds each key once (the runner keeps a repeated key for the next batch).
 */
export async function claimIdempotencyKeys(
  tx: Tx,
  workspaceId: string,
  keys: readonly { key: string; fingerprint: string }[],
  ttlHours: number,
): Promise<Set<string>> {
  try {
    const claimed = await claimManyStatement(tx, { workspaceId, keys: JSON.stringify(keys), ttlHours });
    const mine = new Set(claimed.map((r) => r.key));
    return new Set(keys.map((k) => k.key).filter((k) => !mine.has(k)));
  } catch (err) {
    if (isLockTimeout(err)) throw new AppError('idempotency_in_progress');
    throw err;
  }
}

/**
 * Stores the responses of a batch's requests (`responses`: key, status, body as JSON text), and
 * gives back the keys of its requests that failed on their own (`released`): a failed request
 * leaves no record. Left for COMMIT, with the batch's other statements.
 */
export function storeBatchResponsesAtCommit(
  tx: Tx,
  workspaceId: string,
  responses: readonly { key: string; status: number; body: string }[],
  released: readonly string[],
): void {
  if (responses.length > 0) atCommit(tx, () => storeManyStatement(tx, { workspaceId, responses: JSON.stringify(responses) }));
  if (released.length > 0) atCommit(tx, () => releaseManyStatement(tx, { workspaceId, keys: JSON.stringify(released) }));
}

const claimManyStatement = compiledSql<{ workspaceId: string; keys: string; ttlHours: number }, { key: string }>(
  (p) => sql`insert into idempotency_records (workspace_id, key, fingerprint, expires_at)
    select ${p('workspaceId')}::uuid, k.key, k.fingerprint, now() + make_interval(hours => ${p('ttlHours')}::int)
      from jsonb_to_recordset(${p('keys')}::jsonb) as k(key text, fingerprint text)
    on conflict (workspace_id, key) do update
      set fingerprint = excluded.fingerprint, response_status = null, response_body = null, created_at = now(), expires_at = excluded.expires_at
      where idempotency_records.expires_at < now()
    returning key`,
);
const storeManyStatement = compiledSql<{ workspaceId: string; responses: string }>(
  (p) => sql`update idempotency_records r set response_status = v.status, response_body = v.body::jsonb
    from jsonb_to_recordset(${p('responses')}::jsonb) as v(key text, status int, body text)
    where r.workspace_id = ${p('workspaceId')}::uuid and r.key = v.key`,
);
const releaseManyStatement = compiledSql<{ workspaceId: string; keys: string }>(
  (p) => sql`delete from idempotency_records
    where workspace_id = ${p('workspaceId')}::uuid and key in (select jsonb_array_elements_text(${p('keys')}::jsonb))`,
);
