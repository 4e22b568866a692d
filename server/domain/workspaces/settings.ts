/**
 * A workspace's settings: for now, the urgencies whose decisions are approved only with the
 * approver's passkey. A change is a `workspace.settings_changed` event; one that changes nothing
 * writes none.
 */
import { eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisionUrgencies, workspaces, type DecisionUrgency } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';

export interface WorkspaceSettings {
  passkey_urgencies: DecisionUrgency[];
}

export async function readSettings(tx: Tx, workspaceId: string): Promise<WorkspaceSettings> {
  const [ws] = await tx.select({ urgencies: workspaces.passkeyUrgencies }).from(workspaces).where(eq(workspaces.id, workspaceId));
  if (!ws) throw new AppError('not_found', 'No such workspace.');
  return { passkey_urgencies: decisionUrgencies.filter((u) => ws.urgencies.includes(u)) };
}

export async function changeSettings(tx: Tx, actor: Actor, input: WorkspaceSettings): Promise<WorkspaceSettings> {
  const before = await readSettings(tx, actor.workspaceId);
  // In the order urgencies have, whatever order they came in.
  const next = { passkey_urgencies: decisionUrgencies.filter((u) => input.passkey_urgencies.includes(u)) };
  if (next.passkey_urgencies.join() === before.passkey_urgencies.join()) return before;
  await tx.update(workspaces).set({ passkeyUrgencies: next.passkey_urgencies }).where(eq(workspaces.id, actor.workspaceId));
  await appendEvents(tx, actor, [
    {
      aggregateType: 'workspace',
      aggregateId: actor.workspaceId,
      eventType: 'workspace.settings_changed',
      payload: { passkey_urgencies: next.passkey_urgencies, previous_passkey_urgencies: before.passkey_urgencies },
    },
  ]);
  return next;
}
