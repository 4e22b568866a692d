/**
 * A workspace's settings: the urgencies whose decisions are approved only with the approver's
 * passkey, and how long the stored bytes of artifacts are kept (null: for ever). A change
 * is a `workspace.settings_changed` event carrying the settings before and after; one that changes
 * nothing writes none.
 */
import { eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisionUrgencies, workspaces, type DecisionUrgency } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';

export interface WorkspaceSettings {
  passkey_urgencies: DecisionUrgency[];
  /** Days the stored bytes of artifacts are kept after their last registration; null: for ever. */
  artifact_content_days: number | null;
}

export async function readSettings(tx: Tx, workspaceId: string): Promise<WorkspaceSettings> {
  const [ws] = await tx
    .select({ urgencies: workspaces.passkeyUrgencies, days: workspaces.artifactContentDays })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId));
  if (!ws) throw new AppError('not_found', 'No such workspace.');
  return { passkey_urgencies: decisionUrgencies.filter((u) => ws.urgencies.includes(u)), artifact_content_days: ws.days };
}

export async function changeSettings(tx: Tx, actor: Actor, input: Partial<WorkspaceSettings>): Promise<WorkspaceSettings> {
  const before = await readSettings(tx, actor.workspaceId);
  const next: WorkspaceSettings = {
    // In the order urgencies have, whatever order they came in.
    passkey_urgencies: input.passkey_urgencies
      ? decisionUrgencies.filter((u) => input.passkey_urgencies!.includes(u))
      : before.passkey_urgencies,
    artifact_content_days: input.artifact_content_days !== undefined ? input.artifact_content_days : before.artifact_content_days,
  };
  if (next.passkey_urgencies.join() === before.passkey_urgencies.join() && next.artifact_content_days === before.artifact_content_days) {
    return before;
  }
  await tx
    .update(workspaces)
    .set({ passkeyUrgencies: next.passkey_urgencies, artifactContentDays: next.artifact_content_days })
    .where(eq(workspaces.id, actor.workspaceId));
  await appendEvents(tx, actor, [
    {
      aggregateType: 'workspace',
      aggregateId: actor.workspaceId,
      eventType: 'workspace.settings_changed',
      payload: {
        passkey_urgencies: next.passkey_urgencies,
        previous_passkey_urgencies: before.passkey_urgencies,
        artifact_content_days: next.artifact_content_days,
        previous_artifact_content_days: before.artifact_content_days,
      },
    },
  ]);
  return next;
}
