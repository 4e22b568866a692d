/**
 * Appending to a workspace's ledger. Callers pass the facts (aggregate, type, payload), typed by
 * the registry of event types (event-types.ts, composed in server/domain/events.ts); the actor and
 * its trace fill in who and why; the SQL function ledger_append assigns sequence, aggregateVersion
 * and previousHash under the workspace's head-row lock and seals the hash.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { compiledSql } from '@/db/compiled';
import { atCommit, markMoved, transactionLocals } from '@/db/connection';
import { sharedAcrossWorkspaces } from '@/db/group';
import type { Actor } from '@/server/domain/actor';
import { countAppended } from '@/server/metrics';
import { digestOf, eventCanonicalSegments, type LedgerEvent, type UnsealedEvent } from './canonical';
import type { NewEvent } from './event-types';
import { makeStandIns } from './stand-ins';

export type { NewEvent };

const EVENT_TYPE_PATTERN = /^[a-z][a-z0-9_.-]{0,99}$/;
export const CURRENT_SCHEMA_VERSION = 1;

interface AppendRow {
  r_id: string;
  r_sequence: number | string;
  r_aggregate_version: number;
  r_previous_hash: string;
  r_event_hash: string;
}

/**
 * Appends `events` in order, inside the caller's transaction (one round trip). Returns the sealed
 * events. The events commit or vanish with the caller's other writes; once they have committed,
 * the database tells its commit listeners (db/connection.ts markMoved), which wake the workspace's
 * open readers.
 *
 * `at` is when the change happened: services pass the same instant they write into their rows
 * (created_at, updated_at), so rebuilding the rows from the events gives back the same values.
 */
export async function appendEvents(tx: Tx, actor: Actor, events: readonly NewEvent[], at: Date = new Date()): Promise<LedgerEvent[]> {
  if (events.length === 0) return [];
  const locals = transactionLocals(tx);
  // Outside a transaction nothing would tell the workspace's readers of the commit.
  if (!locals) throw new Error('the ledger is appended to inside a transaction (db.transaction)');
  if (locals[PENDING_APPEND]) throw new Error('this transaction appends at commit: append the rest at commit too (appendEventsAtCommit)');
  refuseEarlyLock(tx);
  const unsealed = unsealedEvents(actor, events, at);
  const rows = await appendStatement(tx, { workspaceId: actor.workspaceId, events: appendInput(unsealed) });
  // Once it has run: an append that failed moved nothing, whatever its caller does next.
  markMoved(locals, actor.workspaceId);
  countAppended(1, rows.length);
  return unsealed.map((e, i) => {
    const row = checkedRow(rows[i], e);
    return {
      ...e,
      sequence: Number(row.r_sequence),
      aggregateVersion: row.r_aggregate_version,
      previousHash: row.r_previous_hash,
      eventHash: row.r_event_hash,
    };
  });
}

/** An append left for the transaction's COMMIT, and what it will tell. */
interface PendingAppend {
  workspaceId: string;
  unsealed: UnsealedEvent[];
  /** What the callers got: the events with stand-ins, each set to its value once the append has run. */
  events: LedgerEvent[];
  /** Four per event, in SEALED_FIELDS order. */
  standIns: (number | string)[];
  values: Promise<string[]>;
}

/** Where a transaction keeps its pending append (db/connection.ts transactionLocals says why not a WeakMap). */
const PENDING_APPEND = Symbol('pending append');

const pendingAppendOf = (tx: Tx) => transactionLocals(tx)?.[PENDING_APPEND] as PendingAppend | undefined;

/**
 * Appends `events` when the transaction commits, in the same flight as its COMMIT
 * (db/connection.ts atCommit), so the workspace's append lock, taken by ledger_append, is held for
 * no round trip to the application: only for the append itself and the commit's WAL flush.
 *
 * The events come back at once, their sequence, aggregateVersion, previousHash and eventHash being
 * stand-ins (stand-ins.ts) until the transaction has committed, when they are set to their values
 * in these same objects. A stand-in may go into the operation's response, which
 * server/api/mutation.ts fills in (and the database, for the stored idempotency response) — never
 * into a statement. A service appends at commit only when nothing after its append needs the
 * append's results; the others call appendEvents. Several calls in one transaction append in
 * call order, in one statement.
 */
export function appendEventsAtCommit(tx: Tx, actor: Actor, events: readonly NewEvent[], at: Date = new Date()): LedgerEvent[] {
  const unsealed = unsealedEvents(actor, events, at);
  let pending = pendingAppendOf(tx);
  if (!pending) {
    let settle!: { resolve: (values: string[]) => void; reject: (err: unknown) => void };
    const values = new Promise<string[]>((resolve, reject) => (settle = { resolve, reject }));
    values.catch(() => undefined);
    const created: PendingAppend = { workspaceId: actor.workspaceId, unsealed: [], events: [], standIns: [], values };
    pending = created;
    atCommit(tx, () => {
      const sent = appendStatement(tx, { workspaceId: created.workspaceId, events: appendInput(created.unsealed) });
      sent.then((rows) => {
        countAppended(1, rows.length);
        settle.resolve(sealPending(created, rows));
      }, settle.reject);
      return sent;
    });
    // After atCommit, which refuses anything but a transaction (which has its locals).
    const locals = transactionLocals(tx)!;
    locals[PENDING_APPEND] = created;
    // Told only if the transaction commits, and it commits only if this append ran.
    markMoved(locals, created.workspaceId);
  } else if (pending.workspaceId !== actor.workspaceId) {
    throw new Error('one transaction appends to one workspace');
  }
  const added = unsealed.map((e) => {
    const [aggregateVersion, previousHash, sequence, eventHash] = makeStandIns();
    pending.standIns.push(aggregateVersion, previousHash, sequence, eventHash);
    return { ...e, aggregateVersion, previousHash, sequence, eventHash };
  });
  pending.unsealed.push(...unsealed);
  pending.events.push(...added);
  return added;
}

/** Sets the pending events' sealed fields from the append's rows; their values in SEALED_FIELDS order. */
function sealPending(pending: PendingAppend, rows: AppendRow[]): string[] {
  const values: string[] = [];
  pending.events.forEach((event, i) => {
    const row = checkedRow(rows[i], event);
    event.aggregateVersion = row.r_aggregate_version;
    event.previousHash = row.r_previous_hash;
    event.sequence = Number(row.r_sequence);
    event.eventHash = row.r_event_hash;
    values.push(String(event.aggregateVersion), event.previousHash, String(event.sequence), event.eventHash);
  });
  return values;
}

/**
 * The append a transaction leaves for its COMMIT, if any: its events' ids and stand-ins (four
 * per event, SEALED_FIELDS order; numbers as their JSON text), and their values once it has run.
 */
export function appendAtCommitOf(tx: Tx): { eventIds: string[]; standIns: string[]; values: Promise<string[]> } | undefined {
  const pending = pendingAppendOf(tx);
  if (!pending) return undefined;
  return { eventIds: pending.unsealed.map((e) => e.id), standIns: pending.standIns.map(String), values: pending.values };
}

function unsealedEvents(actor: Actor, events: readonly NewEvent[], at: Date): UnsealedEvent[] {
  const occurredAtCanonical = at.toISOString();
  return events.map((e) => {
    if (!EVENT_TYPE_PATTERN.test(e.eventType)) throw new Error(`invalid event type ${e.eventType}`);
    return {
      id: randomUUID(),
      workspaceId: actor.workspaceId,
      ownerId: actor.ownerId,
      aggregateType: e.aggregateType,
      aggregateId: e.aggregateId,
      eventType: e.eventType,
      schemaVersion: e.schemaVersion ?? CURRENT_SCHEMA_VERSION,
      actorType: actor.type,
      actorId: actor.id,
      payload: e.payload,
      payloadDigest: digestOf(e.payload),
      occurredAtCanonical,
      idempotencyKey: actor.trace.idempotencyKey,
      causationId: actor.trace.requestId,
      correlationId: actor.trace.correlationId,
      contextManifestDigest: actor.trace.contextManifestDigest,
    };
  });
}

/**
 * ledger_append's input: the events with their canonical segments, as JSON. The payload goes once,
 * as its canonical text (kept as payload_text and hashed as it is), not also as an object.
 */
function appendInput(unsealed: readonly UnsealedEvent[]): string {
  return JSON.stringify(
    unsealed.map((e) => {
      const { segments, payloadText } = eventCanonicalSegments(e);
      return { ...e, payload: undefined, canonical: segments, payloadText };
    }),
  );
}

function checkedRow(row: AppendRow | undefined, event: { id: string }): AppendRow {
  if (!row || row.r_id !== event.id) throw new Error('ledger_append returned an unexpected row');
  return row;
}

/** Every write runs it: built once (db/compiled.ts). */
const appendStatement = compiledSql<{ workspaceId: string; events: string }, AppendRow>(
  (p) => sql`select * from ledger_append(${p('workspaceId')}::uuid, ${p('events')}::jsonb)`,
);

/**
 * Takes the workspace's append lock now instead of at the append. Services that change existing
 * rows of the work hierarchy or runs call it first: they all end up holding this lock anyway, and
 * taking it before any row lock gives them one lock order, so they can never deadlock each other.
 */
export async function lockWorkspaceLedger(tx: Tx, workspaceId: string): Promise<void> {
  refuseEarlyLock(tx);
  await tx.execute(sql`select 1 from ledger_heads where workspace_id = ${workspaceId} for update`);
}

/**
 * A write sharing its transaction with writes to other workspaces (db/group.ts, shared groups)
 * takes ledger locks only at COMMIT, where they are taken in workspace order: a lock taken before
 * could deadlock two such transactions. A programming error (the operation should not have asked
 * for a shared transaction), so a plain Error: a 500 that the tests meet.
 */
function refuseEarlyLock(tx: Tx): void {
  if (sharedAcrossWorkspaces(tx)) {
    throw new Error('a transaction shared across workspaces takes ledger locks only at COMMIT: append with appendEventsAtCommit');
  }
}
