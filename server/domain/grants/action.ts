/**
 * The action a decision is about (POST /decisions `action`), and what ties a ruling to it: its
 * digest, and the version of the task it acts on as the decision's own changes left it.
 */
import { and, eq } from 'drizzle-orm';
import type { Executor } from '@/db';
import { tasks, type DecisionAction } from '@/db/schema';
import { digestOf } from '@/server/ledger/canonical';
import { AppError } from '@/server/errors';

/** `sha256:` + hex(SHA-256(JCS(action))) (RFC 8785): what a grant names and a tool server compares. */
export function actionDigest(action: DecisionAction): string {
  return digestOf(action);
}

/** The version of the workspace's task `id` now; 404 when there is no such task. */
export async function taskVersion(db: Executor, workspaceId: string, id: string): Promise<number> {
  const [task] = await db
    .select({ version: tasks.version })
    .from(tasks)
    .where(and(eq(tasks.workspaceId, workspaceId), eq(tasks.id, id)));
  if (!task) throw new AppError('not_found', 'No task with that id in this workspace.', { fields: ['action.target.id'] });
  return task.version;
}

/**
 * An action's target must name its task at the version the task is at: an agent that proposes to
 * act on what it read must have read what is there. 409 approval_stale otherwise, with the
 * version to read again.
 */
export async function checkTargetCurrent(db: Executor, workspaceId: string, action: DecisionAction): Promise<void> {
  if (!action.target) return;
  const current = await taskVersion(db, workspaceId, action.target.id);
  if (current !== action.target.version) {
    throw new AppError(
      'approval_stale',
      `The task is at version ${current}, not ${action.target.version}: read it again and raise the decision for it as it is.`,
      { target_id: action.target.id, version: action.target.version, current_version: current },
    );
  }
}
