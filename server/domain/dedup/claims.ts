/**
 * Duplicate-trigger claims (POST /live/dedup/claim and /release). A fingerprint of
 * `{source, event_key, initiative_id}` is held by one run at a time until it expires or its
 * holder releases it. A claim inserts the fingerprint's row, or takes it over with a conditional
 * UPDATE when it is free (or extends it for the same run): the unique index and the row lock elect
 * exactly one holder among concurrent claimants, and the answer is given only after the claim and its ledger event commit
 * (a store that cannot record it makes the request fail with 503, never `claimed: true`).
 */
import { randomUUID } from 'node:crypto';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { v5 as uuidv5 } from 'uuid';
import { query, type Database, type Tx } from '@/db';
import { dedupClaims } from '@/db/schema';
import { AppError } from '@/server/errors';
import { appendEvents } from '@/server/ledger/append';
import { canonicalJson, sha256Hex } from '@/server/ledger/canonical';
import { systemActor, type Actor } from '../actor';
import { claimRecord, type ClaimRow } from '../hierarchy/records';
import { leaseExpiredError, leaseLapsedSql } from '../runs/lease';

export const DEFAULT_TTL_SECONDS = 6 * 60 * 60;

export interface ClaimInput {
  source: string;
  event_key: string;
  initiative_id?: string;
  ttl_seconds?: number;
  run_id?: string;
}

export interface ClaimOutcome {
  deduped: boolean;
  claimed: boolean;
  fingerprint_hash: string;
  active_run_id: string;
  expires_at: string;
}

export interface ReleaseOutcome {
  released: boolean;
  fingerprint_hash: string;
  active_run_id: string | null;
  expires_at: string | null;
}

/** Hex SHA-256 of the canonical JSON of the three identifying fields (docs/contract.md §4.4). */
function fingerprintHash(input: Pick<ClaimInput, 'source' | 'event_key' | 'initiative_id'>): string {
  return sha256Hex(canonicalJson({ event_key: input.event_key, initiative_id: input.initiative_id ?? null, source: input.source }));
}

/** The claim's aggregate id: one per fingerprint in a workspace. */
const claimId = (workspaceId: string, fingerprint: string) => uuidv5(`dedup/${fingerprint}`, workspaceId);

/** A timestamp parameter for raw SQL (drivers differ in how they send a Date). */
const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;

const held = (row: ClaimRow, now: Date) => row.releasedAt === null && row.expiresAt.getTime() > now.getTime();

/**
 * The ids a claim names must be this workspace's, as every id the API takes is: an initiative of
 * it, and a run of it or a holder id one of its claims generated (a claim without `run_id` is held
 * by a fresh id, which the caller then re-claims and releases with). Otherwise 404, the same for
 * another workspace's id as for one that does not exist. One statement, only when ids are given.
 */
async function assertOwnIds(tx: Tx, workspaceId: string, input: { initiative_id?: string; run_id?: string }, now: Date): Promise<void> {
  if (input.initiative_id === undefined && input.run_id === undefined) return;
  const initiative = input.initiative_id ?? null;
  const run = input.run_id ?? null;
  const [found] = await query<{ initiative: boolean; run: boolean; lapsed_fence: number | null }>(
    tx,
    sql`select
          (${initiative}::uuid is null or exists (select 1 from initiatives where workspace_id = ${workspaceId} and id = ${initiative}::uuid)) as initiative,
          (${run}::uuid is null
            or exists (select 1 from runs where workspace_id = ${workspaceId} and id = ${run}::uuid)
            or exists (select 1 from dedup_claims where workspace_id = ${workspaceId} and active_run_id = ${run}::uuid)) as run,
          (select fence from runs where workspace_id = ${workspaceId} and id = ${run}::uuid and ${leaseLapsedSql(now)}) as lapsed_fence`,
  );
  if (!found?.initiative) throw new AppError('not_found', 'No such initiative in your workspace.');
  if (!found.run) {
    throw new AppError(
      'not_found',
      'No such run in your workspace: give one of its runs, the run id a claim of it generated, or none (a claim then generates one).',
    );
  }
  // A run whose lease lapsed claims nothing more (server/domain/runs/lease.ts).
  if (found.lapsed_fence !== null) throw leaseExpiredError({ runId: run!, fence: Number(found.lapsed_fence) });
}

export async function claimFingerprint(tx: Tx, actor: Actor, input: ClaimInput): Promise<ClaimOutcome> {
  const now = new Date();
  await assertOwnIds(tx, actor.workspaceId, input, now);
  const fingerprint = fingerprintHash(input);
  const runId = input.run_id ?? randomUUID();
  const expiresAt = new Date(now.getTime() + (input.ttl_seconds ?? DEFAULT_TTL_SECONDS) * 1000);
  const t = dedupClaims;
  const mine = and(eq(t.workspaceId, actor.workspaceId), eq(t.fingerprintHash, fingerprint));
  // 1. A new fingerprint: insert it. A concurrent claimant's uncommitted insert makes this wait for
  //    its outcome; an existing row is left alone (and unlocked).
  let [row] = await tx
    .insert(t)
    .values({
      id: claimId(actor.workspaceId, fingerprint),
      workspaceId: actor.workspaceId,
      fingerprintHash: fingerprint,
      source: input.source,
      eventKey: input.event_key,
      initiativeId: input.initiative_id ?? null,
      activeRunId: runId,
      claimedAt: now,
      expiresAt,
      releasedAt: null,
      // The claim's next aggregate version: 1, or after the row was pruned (pruneEndedClaims), the
      // one its ledger events go on with, as the projection replayed from them has it.
      version: sql`(select coalesce(max(aggregate_version), 0) + 1 from ledger_events
                     where workspace_id = ${actor.workspaceId} and aggregate_id = ${claimId(actor.workspaceId, fingerprint)})`,
      updatedAt: now,
    })
    // No conflict target: the id is derived from (workspace, fingerprint), so a racing insert
    // collides on the primary key as well as on that pair, and ON CONFLICT with the pair as its
    // only arbiter let the primary key's collision through as an error (a 500 under load).
    .onConflictDoNothing()
    .returning();
  if (!row) {
    // 2. Take it over when it is free (expired or released), or extend it when this run holds it.
    //    Only a row that qualifies is locked, so deduped claimants never queue behind each other;
    //    of two taking over at once, the second re-reads the row after the first and finds it held.
    const holding = sql`${t.activeRunId} = ${runId} and ${t.releasedAt} is null`;
    [row] = await tx
      .update(t)
      .set({
        activeRunId: runId,
        // The holder re-claiming keeps its claimed_at and never shortens its claim.
        claimedAt: sql`case when ${holding} and ${t.expiresAt} > ${at(now)} then ${t.claimedAt} else ${at(now)} end`,
        expiresAt: sql`case when ${holding} then greatest(${t.expiresAt}, ${at(expiresAt)}) else ${at(expiresAt)} end`,
        releasedAt: null,
        version: sql`${t.version} + 1`,
        updatedAt: now,
      })
      .where(
        and(
          mine,
          sql`(${t.expiresAt} <= ${at(now)} or ${t.releasedAt} is not null or ${t.activeRunId} = ${runId})`,
          // The holder re-claiming with a lifetime that ends no later changes nothing: no write.
          sql`not (${holding} and ${t.expiresAt} > ${at(now)} and ${t.expiresAt} >= ${at(expiresAt)})`,
        ),
      )
      .returning();
  }

  if (!row) {
    // 3. Another run holds it, or this run holds it already for at least as long.
    const [holder] = await tx.select().from(t).where(mine);
    if (holder && holder.activeRunId === runId && held(holder, now)) {
      return {
        deduped: false,
        claimed: true,
        fingerprint_hash: fingerprint,
        active_run_id: runId,
        expires_at: holder.expiresAt.toISOString(),
      };
    }
    return {
      deduped: true,
      claimed: false,
      fingerprint_hash: fingerprint,
      active_run_id: holder!.activeRunId,
      expires_at: holder!.expiresAt.toISOString(),
    };
  }
  const extended = row.claimedAt.getTime() !== now.getTime();
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'dedup_claim',
        aggregateId: row.id,
        eventType: extended ? 'dedup.extended' : 'dedup.claimed',
        payload: { claim: claimRecord(row), ttl_seconds: input.ttl_seconds ?? DEFAULT_TTL_SECONDS },
      },
    ],
    now,
  );
  return {
    deduped: false,
    claimed: true,
    fingerprint_hash: fingerprint,
    active_run_id: row.activeRunId,
    expires_at: row.expiresAt.toISOString(),
  };
}

export interface ReleaseInput {
  source: string;
  event_key: string;
  initiative_id?: string;
  run_id: string;
}

/** Frees a fingerprint early; only its current holder can. */
export async function releaseFingerprint(tx: Tx, actor: Actor, input: ReleaseInput): Promise<ReleaseOutcome> {
  const now = new Date();
  await assertOwnIds(tx, actor.workspaceId, input, now);
  const fingerprint = fingerprintHash(input);
  const t = dedupClaims;
  const [row] = await tx
    .update(t)
    .set({ releasedAt: now, version: sql`${t.version} + 1`, updatedAt: now })
    .where(
      and(
        eq(t.workspaceId, actor.workspaceId),
        eq(t.fingerprintHash, fingerprint),
        eq(t.activeRunId, input.run_id),
        sql`${t.releasedAt} is null`,
        sql`${t.expiresAt} > ${at(now)}`,
      ),
    )
    .returning();
  if (row) {
    await appendEvents(
      tx,
      actor,
      [{ aggregateType: 'dedup_claim', aggregateId: row.id, eventType: 'dedup.released', payload: { claim: claimRecord(row) } }],
      now,
    );
    return { released: true, fingerprint_hash: fingerprint, active_run_id: null, expires_at: null };
  }
  const [current] = await tx
    .select()
    .from(t)
    .where(and(eq(t.workspaceId, actor.workspaceId), eq(t.fingerprintHash, fingerprint)));
  const holding = current && held(current, now);
  return {
    released: false,
    fingerprint_hash: fingerprint,
    active_run_id: holding ? current.activeRunId : null,
    expires_at: holding ? current.expiresAt.toISOString() : null,
  };
}

/** A claim that ended is kept this long before it may be pruned (room for clocks that disagree). */
const PRUNE_GRACE_MS = 60_000;

/** When a claim ended: its release, else its expiry (drizzle/0018's index on it). */
const endedAt = sql`coalesce(${dedupClaims.releasedAt}, ${dedupClaims.expiresAt})`;

/**
 * Deletes up to `limit` claims that ended (released, or expired) more than a minute before `now`,
 * oldest first: they dedupe nothing any more, and a later claim of the fingerprint inserts it anew.
 * Each goes with a `dedup.pruned` ledger event in its workspace's transaction (the projection
 * drops the row on it), so the table still follows from the ledger. Returns how many were found;
 * one claimed again meanwhile is no longer ended and stays.
 */
export async function pruneEndedClaims(db: Database, now = new Date(), limit = 1000): Promise<number> {
  const before = new Date(now.getTime() - PRUNE_GRACE_MS).toISOString();
  const ended = await db
    .select({ id: dedupClaims.id, workspaceId: dedupClaims.workspaceId })
    .from(dedupClaims)
    .where(sql`${endedAt} <= ${before}::timestamptz`)
    .orderBy(endedAt)
    .limit(limit);
  // Map.groupBy is Node 21's.
  const byWorkspace = new Map<string, typeof ended>();
  for (const c of ended) byWorkspace.set(c.workspaceId, [...(byWorkspace.get(c.workspaceId) ?? []), c]);
  for (const [workspaceId, claims] of byWorkspace) {
    await db.transaction(async (tx) => {
      const gone = await tx
        .delete(dedupClaims)
        .where(
          and(
            eq(dedupClaims.workspaceId, workspaceId),
            inArray(
              dedupClaims.id,
              claims.map((c) => c.id),
            ),
            sql`${endedAt} <= ${before}::timestamptz`,
          ),
        )
        .returning();
      if (gone.length === 0) return;
      await appendEvents(
        tx,
        await systemActor(tx, workspaceId, 'system:retention'),
        gone.map((row) => ({
          aggregateType: 'dedup_claim',
          aggregateId: row.id,
          eventType: 'dedup.pruned',
          payload: { claim: claimRecord(row) },
        })),
        now,
      );
    });
  }
  return ended.length;
}
