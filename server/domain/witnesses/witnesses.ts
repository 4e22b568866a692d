/**
 * The witnesses a workspace's owners name (POST/GET/DELETE /ledger/witnesses): only a named
 * witness's cosignature is kept and served with the checkpoints (server/ledger/cosignatures.ts),
 * so nobody holding a key of the workspace can vouch for its ledger under a name of their choosing,
 * nor grow what every witness reads. Naming and removing are ledger events, in the same transaction
 * as the row; the cosignatures themselves stay outside the ledger (cosignatures.ts says why).
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { ledgerWitnesses } from '@/db/schema';
import { AppError } from '@/server/errors';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import type { PayloadOf } from '@/server/ledger/event-types';
import { witnessKeyOf } from '@/server/ledger/cosignatures';
import { vkeyOf } from '@/server/ledger/note';
import type { Actor } from '../actor';
import { witnessRow } from './events';

/**
 * The most witnesses a workspace names: each adds one line (about 250 bytes) to every checkpoint
 * served, and the witnesses read the checkpoint whole.
 */
export const MAX_WITNESSES_PER_WORKSPACE = 20;

type WitnessRow = typeof ledgerWitnesses.$inferSelect;

export interface WitnessView {
  id: string;
  name: string;
  key_id: string;
  vkey: string;
  named_at: string;
}

const view = (row: WitnessRow): WitnessView => ({
  id: row.id,
  name: row.name,
  key_id: row.keyId,
  vkey: row.vkey,
  named_at: row.createdAt.toISOString(),
});

const refused = (field: string, message: string) => new AppError('validation_failed', message, { issues: [{ path: field, message }] });

export interface NameWitnessInput {
  vkey: string;
  /** When sent, it must be the vkey's own name: a check that the key is the one meant. */
  name?: string;
}

/** Names a witness: its cosignatures are kept and served from now on. The same key named twice is 409. */
export async function nameWitness(tx: Tx, actor: Actor, input: NameWitnessInput): Promise<WitnessView> {
  const key = witnessKeyOf(input.vkey, 'vkey');
  if (input.name !== undefined && input.name !== key.name) {
    throw refused('name', `The name is the verifier key’s own: ${key.name}, not ${input.name}.`);
  }
  const keyId = key.keyId.toString('hex');
  // One at a time per workspace: the checks below and the insert see the same named witnesses.
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const named = await tx
    .select({ id: ledgerWitnesses.id, name: ledgerWitnesses.name, keyId: ledgerWitnesses.keyId })
    .from(ledgerWitnesses)
    .where(eq(ledgerWitnesses.workspaceId, actor.workspaceId));
  const same = named.find((w) => w.name === key.name && w.keyId === keyId);
  if (same) throw new AppError('conflict', `The witness ${key.name} with key ${keyId} is already named (${same.id}).`, { id: same.id });
  if (named.length >= MAX_WITNESSES_PER_WORKSPACE) {
    throw new AppError('conflict', `A workspace names at most ${MAX_WITNESSES_PER_WORKSPACE} witnesses; remove one first.`);
  }
  const payload: PayloadOf<'witness.named'> = { id: randomUUID(), name: key.name, key_id: keyId, vkey: vkeyOf(key) };
  const now = new Date();
  // The row is what the replay makes of the event: the write and the rebuild give one row.
  const [row] = await tx
    .insert(ledgerWitnesses)
    .values(witnessRow(payload, { workspaceId: actor.workspaceId, version: 1, at: now }))
    .returning();
  await appendEvents(tx, actor, [{ aggregateType: 'witness', aggregateId: payload.id, eventType: 'witness.named', payload }], now);
  return view(row!);
}

/** Removes a named witness: its cosignatures are refused and no longer served. 404 when it is not named here. */
export async function removeWitness(tx: Tx, actor: Actor, id: string): Promise<{ id: string; removed: true }> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [row] = await tx
    .delete(ledgerWitnesses)
    .where(and(eq(ledgerWitnesses.workspaceId, actor.workspaceId), eq(ledgerWitnesses.id, id)))
    .returning();
  if (!row) throw new AppError('not_found', 'No such witness in your workspace.');
  await appendEvents(tx, actor, [
    { aggregateType: 'witness', aggregateId: id, eventType: 'witness.removed', payload: { id, name: row.name, key_id: row.keyId } },
  ]);
  return { id, removed: true };
}

/** The witnesses named in the workspace, in the order they were named. */
export async function listWitnesses(db: Executor, workspaceId: string): Promise<WitnessView[]> {
  const rows = await db
    .select()
    .from(ledgerWitnesses)
    .where(eq(ledgerWitnesses.workspaceId, workspaceId))
    .orderBy(asc(ledgerWitnesses.createdAt), asc(ledgerWitnesses.id));
  return rows.map(view);
}
