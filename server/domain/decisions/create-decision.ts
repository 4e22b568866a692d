/**
 * Raising a decision for a human ruling. Its placement (initiative, workstream) is derived from the
 * task or run it names; its options default to approve / decline for the option shapes.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { query, type Tx } from '@/db';
import {
  artifacts,
  decisions,
  runs,
  tasks,
  workspaces,
  type DecisionAction,
  type DecisionOption,
  type DecisionShape,
  type DecisionUrgency,
} from '@/db/schema';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import type { PayloadOf } from '@/server/ledger/event-types';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { assertLeaseHeld } from '../runs/lease';
import { actorNameSql, decisionView, type DecisionView } from './view';
import { writeStatusChanges, type StatusChange } from '../status-changes';
import { followTask } from '../runs/hierarchy';
import { actionDigest, checkTargetCurrent, taskVersion } from '../grants/action';
import { DEFAULT_GRANT_TTL_SECONDS } from '../grants/issue';
import { artifactView, type ArtifactView } from '../artifacts/view';
import { DEFAULT_OPTIONS, OPTION_SHAPES } from './options';
import { policyDigest, type PolicyInput } from './policy';
import { policyForNewDecision } from './workspace-policy';
import { escalationDue } from './decide';
import { decisionRow } from './events';

export interface CreateDecisionInput {
  title: string;
  description?: string;
  shape: DecisionShape;
  urgency: DecisionUrgency;
  blocks_task: boolean;
  task_id?: string;
  run_id?: string;
  due_at?: string;
  on_timeout: 'expire' | 'decline';
  shape_context?: { options?: DecisionOption[] };
  /** The exact action under decision; its target task, when named, must be at the version given. */
  action?: DecisionAction;
  /** Whether the approver may change the action's arguments (with an action only). */
  editable?: boolean;
  /** How long the grant issued on approval lasts (with an action only; default 900). */
  grant_ttl_seconds?: number;
  /** Approving it takes the approver's passkey (also when the workspace asks it of the decision's urgency). */
  require_passkey?: boolean;
  /** The artifacts the approver is shown; with an action, their digests join it before it is digested. */
  artifact_ids?: string[];
  /** Who must approve, in which stages; without one, the workspace's first matching rule, else the default. */
  policy?: PolicyInput;
  /** Raised by the MCP gateway for a call of an upstream tool (never from the REST body). */
  gateway?: { server_id: string; server: string; tool: string };
}

export async function createDecision(tx: Tx, actor: Actor, input: CreateDecisionInput): Promise<DecisionView> {
  checkActionFields(input);
  // Holding a run changes it: take the ledger lock first, as every run change does (one lock order).
  if (input.blocks_task && input.run_id) await lockWorkspaceLedger(tx, actor.workspaceId);
  const shown = await namedArtifacts(tx, actor.workspaceId, input.artifact_ids ?? []);
  // Approving the action approves these exact bytes: their digests are part of what is digested.
  const action = input.action
    ? { ...input.action, ...(shown.length > 0 ? { artifacts: shown.map((a) => ({ id: a.id, sha256: a.digest })) } : {}) }
    : null;
  if (action) await checkTargetCurrent(tx, actor.workspaceId, action);
  // A decision about an action on a task is a decision about that task, unless it names another.
  const placement = await resolvePlacement(tx, actor.workspaceId, {
    ...input,
    task_id: input.task_id ?? (input.run_id ? undefined : action?.target?.id),
  });
  if (input.blocks_task && !placement.taskId) {
    throw new AppError('validation_failed', 'blocks_task needs the task it blocks.', {
      issues: [{ path: 'blocks_task', message: 'true requires task_id or run_id' }],
    });
  }
  const dueAt = input.due_at ? new Date(input.due_at) : null;
  if (dueAt && dueAt.getTime() <= Date.now()) {
    throw new AppError('validation_failed', 'due_at must be in the future.', {
      issues: [{ path: 'due_at', message: 'must be in the future' }],
    });
  }
  const given = input.shape_context?.options;
  const options = given && given.length > 0 ? given : OPTION_SHAPES.includes(input.shape) ? DEFAULT_OPTIONS : [];
  const { policy, source } = await policyForNewDecision(tx, actor, {
    policy: input.policy,
    urgency: input.urgency,
    tool: action?.tool ?? null,
    editable: input.editable ?? false,
    options,
  });
  const now = new Date();
  const raised: PayloadOf<'decision.created'> = {
    id: randomUUID(),
    workspace_id: actor.workspaceId,
    title: input.title,
    description: input.description ?? null,
    status: 'pending',
    shape: input.shape,
    urgency: input.urgency,
    blocks_task: input.blocks_task,
    task_id: placement.taskId,
    run_id: placement.runId,
    initiative_id: placement.initiativeId,
    workstream_id: placement.workstreamId,
    shape_context: { options },
    due_at: dueAt?.toISOString() ?? null,
    on_timeout: input.on_timeout,
    resolution: null,
    action,
    action_digest: action ? actionDigest(action) : null,
    editable: input.editable ?? false,
    grant_ttl_seconds: action ? (input.grant_ttl_seconds ?? DEFAULT_GRANT_TTL_SECONDS) : null,
    target_version: action?.target?.version ?? null,
    require_passkey: input.require_passkey === true || (await passkeyUrgencies(tx, actor.workspaceId)).includes(input.urgency),
    artifacts: shown,
    policy,
    policy_digest: policyDigest(policy),
    escalated_steps: 0,
    next_escalation_at: escalationDue(policy, now, 0)?.toISOString() ?? null,
    policy_source: source,
    created_by: { type: actor.type, id: actor.id },
    gateway: input.gateway ?? null,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
  };
  // The row is what the replay makes of the event: the write and the rebuild give one row.
  const row = decisionRow(raised, { workspaceId: actor.workspaceId, version: 1, at: now });
  await tx.insert(decisions).values(row);
  const held = input.blocks_task && placement.runId ? await holdRunFor(tx, actor.workspaceId, placement.runId, row.id, now) : [];
  // The hold moved the task on (it follows its paused run): the grant holds for it as it is now.
  if (action?.target && held.length > 0) {
    const targetVersion = await taskVersion(tx, actor.workspaceId, action.target.id);
    if (targetVersion !== row.targetVersion) {
      await tx.update(decisions).set({ targetVersion }).where(eq(decisions.id, row.id));
      row.targetVersion = raised.target_version = targetVersion;
    }
  }
  // The event carries the decision as raised, as the API shows it: nothing approved or ruled yet.
  const payload = { ...raised, approved_action: null, approved_action_digest: null, approvals: [], declines: [] };
  const [event] = await appendEvents(
    tx,
    actor,
    [{ aggregateType: 'decision', aggregateId: row.id, eventType: 'decision.created', payload }, ...held],
    now,
  );
  const snapshot = decisionView(row, null, [], null, shown);
  const [named] = await query<{ name: string | null }>(
    tx,
    sql`select ${actorNameSql(actor.workspaceId, event!.actorType, event!.actorId)} as name`,
  );
  return {
    ...snapshot,
    history: [
      {
        event_id: event!.id,
        event_type: event!.eventType,
        sequence: event!.sequence,
        actor_type: event!.actorType,
        actor_id: event!.actorId,
        actor_name: named?.name ?? null,
        occurred_at: event!.occurredAtCanonical,
        event_hash: event!.eventHash,
      },
    ],
  };
}

/** The artifacts a decision names, in the order named (each once): 404 for one that is not the workspace's. */
async function namedArtifacts(tx: Tx, workspaceId: string, ids: readonly string[]): Promise<ArtifactView[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const rows = await tx
    .select()
    .from(artifacts)
    .where(and(eq(artifacts.workspaceId, workspaceId), inArray(artifacts.id, unique)));
  const byId = new Map(rows.map((r) => [r.id, artifactView(r)]));
  const missing = unique.filter((id) => !byId.has(id));
  if (missing.length > 0) {
    throw new AppError('not_found', `No artifact ${missing.join(', ')} in this workspace.`, { fields: ['artifact_ids'] });
  }
  return unique.map((id) => byId.get(id)!);
}

/** The urgencies whose decisions the workspace approves only with a passkey. */
async function passkeyUrgencies(tx: Tx, workspaceId: string): Promise<string[]> {
  const [ws] = await tx.select({ urgencies: workspaces.passkeyUrgencies }).from(workspaces).where(eq(workspaces.id, workspaceId));
  return ws?.urgencies ?? [];
}

/** editable and grant_ttl_seconds say something of an action: without one they are a mistake. */
function checkActionFields(input: CreateDecisionInput): void {
  if (input.action) return;
  const stray = (['editable', 'grant_ttl_seconds'] as const).filter((f) => input[f] !== undefined);
  if (stray.length > 0) {
    throw new AppError('validation_failed', `${stray.join(' and ')} need an action.`, {
      issues: stray.map((path) => ({ path, message: 'needs action' })),
    });
  }
}

/**
 * A blocking decision raised on a queued or running run pauses it until the ruling, and its task
 * (which follows its run) shows `blocked`. Returns the events of those changes.
 */
async function holdRunFor(tx: Tx, workspaceId: string, runId: string, decisionId: string, now: Date): Promise<NewEvent[]> {
  const [found] = await tx
    .select({ run: runs, task: { id: tasks.id, status: tasks.status } })
    .from(runs)
    .innerJoin(tasks, eq(tasks.id, runs.taskId))
    .where(and(eq(runs.id, runId), eq(runs.workspaceId, workspaceId)));
  if (!found || (found.run.status !== 'queued' && found.run.status !== 'running')) return [];
  const changes: StatusChange[] = [
    {
      level: 'run',
      id: runId,
      from: found.run.status,
      to: 'paused',
      pauseId: null,
      resumeStatus: null,
      eventType: 'run.paused',
      run: found.run,
      pausedForDecisionId: decisionId,
    },
  ];
  const follows = followTask(found.task, { status: 'paused', pausedForDecisionId: decisionId });
  if (follows) changes.push(follows);
  return writeStatusChanges(tx, workspaceId, changes, now, { decision_id: decisionId, reason: 'waiting for a blocking decision' });
}

interface Placement {
  taskId: string | null;
  runId: string | null;
  initiativeId: string | null;
  workstreamId: string | null;
}

/** The task and run named (each must be in the workspace, and the run must be of the task), and where they sit. */
async function resolvePlacement(tx: Tx, workspaceId: string, input: CreateDecisionInput): Promise<Placement> {
  let taskId = input.task_id ?? null;
  let runId: string | null = null;
  if (input.run_id) {
    const [run] = await tx
      .select()
      .from(runs)
      .where(and(eq(runs.id, input.run_id), eq(runs.workspaceId, workspaceId)));
    if (!run) throw new AppError('not_found', 'No run with that id in this workspace.', { fields: ['run_id'] });
    // A run whose lease lapsed raises no more decisions: its task may be another agent's.
    assertLeaseHeld(run, new Date());
    if (taskId && taskId !== run.taskId) {
      throw new AppError('validation_failed', 'The run is not a run of that task.', {
        issues: [{ path: 'run_id', message: 'must be a run of task_id' }],
      });
    }
    runId = run.id;
    taskId = run.taskId;
  }
  if (!taskId) return { taskId: null, runId: null, initiativeId: null, workstreamId: null };
  const [task] = await tx
    .select({ initiativeId: tasks.initiativeId, workstreamId: tasks.workstreamId })
    .from(tasks)
    .where(and(eq(tasks.id, taskId), eq(tasks.workspaceId, workspaceId)));
  if (!task) throw new AppError('not_found', 'No task with that id in this workspace.', { fields: ['task_id'] });
  return { taskId, runId, initiativeId: task.initiativeId, workstreamId: task.workstreamId };
}
