/**
 * Runs of tasks as their agent reports them: start one, record checkpoints, finish it. Every
 * service here (and the control actions, server/domain/runs/actions.ts) takes the workspace's
 * ledger lock first (one lock order with node actions and rulings), changes the run, lets the
 * task follow, and appends the events in one call. How a run is shown is server/domain/runs/view.ts;
 * its task and the work above it, server/domain/runs/hierarchy.ts.
 */
import { randomUUID } from 'node:crypto';
import { eq, max } from 'drizzle-orm';
import type { Tx } from '@/db';
import { runCheckpoints, runs } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { checkRunArtifacts } from '../artifacts/artifacts';
import { checkpointRecord, runRecord, type CheckpointRow, type RunRow } from '../hierarchy/records';
import { runAfter, writeStatusChanges } from '../status-changes';
import { assertWorkOpen, followTask, moveRun, taskOf, workOf } from './hierarchy';
import { DEFAULT_LEASE_SECONDS, assertLeaseHeld, leaseUntil, nextFences } from './lease';
import { RUN_REPORTS, verdict } from './machine';
import { checkpointView, findRun, loadRunView, runView, type CheckpointView, type RunView } from './view';

const notFound = () => new AppError('not_found', 'No such run in your workspace.');

export function refuse(run: RunRow, what: string): AppError {
  return new AppError('invalid_state_transition', `Cannot ${what} a run that is ${run.status}.`, { status: run.status, runId: run.id });
}

export async function locked(tx: Tx, actor: Actor, runId: string): Promise<RunRow> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const run = await findRun(tx, actor.workspaceId, runId);
  if (!run) throw notFound();
  return run;
}

// ---- start -----------------------------------------------------------------------------------

/**
 * A new run's row (`running` when an agent starts it, `queued` when the service re-dispatches its
 * task). `fence` is its place among its task's runs (lease.ts nextFences); a running run holds its
 * lease from `at`, a queued one from when it starts.
 */
export function newRun(opts: {
  workspaceId: string;
  taskId: string;
  agentId: string | null;
  status: 'running' | 'queued';
  at: Date;
  fence: number;
  leaseSeconds?: number;
}): RunRow {
  const leaseSeconds = opts.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
  return {
    id: randomUUID(),
    workspaceId: opts.workspaceId,
    taskId: opts.taskId,
    agentId: opts.agentId,
    status: opts.status,
    pausedForDecisionId: null,
    pauseId: null,
    resumeStatus: null,
    checkpointId: null,
    summary: null,
    finishedAt: null,
    fence: opts.fence,
    leaseSeconds,
    leaseExpiresAt: opts.status === 'running' ? leaseUntil(opts.at, leaseSeconds) : null,
    failureReason: null,
    artifactIds: [],
    version: 1,
    createdAt: opts.at,
    updatedAt: opts.at,
  };
}

export interface CreateRunInput {
  task_id: string;
  agent_id?: string;
  lease_seconds?: number;
}

/**
 * Starts a run of a task (status `running`; the task becomes `in_progress`). A task takes one open
 * run at a time, and only while it and the nodes above it are active.
 */
export async function createRun(tx: Tx, actor: Actor, input: CreateRunInput): Promise<RunView> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const work = await workOf(tx, actor.workspaceId, input.task_id);
  if (!work) throw new AppError('not_found', 'No task with that id in your workspace.', { fields: ['task_id'] });
  await assertWorkOpen(tx, work, 'start a run', null);
  const { task } = work;
  const now = new Date();
  const run = newRun({
    workspaceId: actor.workspaceId,
    taskId: task.id,
    agentId: input.agent_id ?? task.agentId,
    status: 'running',
    at: now,
    fence: (await nextFences(tx, [task.id])).get(task.id)!,
    leaseSeconds: input.lease_seconds,
  });
  await tx.insert(runs).values(run);
  const follows = followTask(task, run);
  const events: NewEvent[] = [{ aggregateType: 'run', aggregateId: run.id, eventType: 'run.created', payload: { ...runRecord(run) } }];
  if (follows) events.push(...(await writeStatusChanges(tx, actor.workspaceId, [follows], now, { run_id: run.id })));
  await appendEvents(tx, actor, events, now);
  return runView(run, []);
}

// ---- checkpoints -----------------------------------------------------------------------------

export interface CheckpointInput {
  label: string;
  state?: Record<string, unknown>;
}

/**
 * Records a checkpoint of a running run (the first checkpoint of a queued run starts it). It renews
 * the run's lease, as a heartbeat does.
 */
export async function addCheckpoint(tx: Tx, actor: Actor, runId: string, input: CheckpointInput): Promise<CheckpointView> {
  const run = await locked(tx, actor, runId);
  const now = new Date();
  assertLeaseHeld(run, now);
  const events: NewEvent[] = [];
  let current = run;
  if (run.status === 'queued') {
    const changes = moveRun(run, await taskOf(tx, run), RUN_REPORTS.start.to, 'run.started');
    events.push(...(await writeStatusChanges(tx, actor.workspaceId, changes, now, { reason: 'first checkpoint' })));
    current = runAfter(changes[0]!, now);
  } else if (run.status !== 'running') {
    throw refuse(run, 'record a checkpoint of');
  }
  current = { ...current, leaseExpiresAt: leaseUntil(now, current.leaseSeconds) };
  const [last] = await tx
    .select({ position: max(runCheckpoints.position) })
    .from(runCheckpoints)
    .where(eq(runCheckpoints.runId, run.id));
  const checkpoint: CheckpointRow = {
    id: randomUUID(),
    workspaceId: actor.workspaceId,
    runId: run.id,
    position: (last?.position ?? 0) + 1,
    label: input.label,
    state: input.state ?? null,
    createdAt: now,
  };
  await tx.insert(runCheckpoints).values(checkpoint);
  events.push({
    aggregateType: 'run',
    aggregateId: run.id,
    eventType: 'run.checkpointed',
    payload: { ...runRecord({ ...current, version: current.version + 1, updatedAt: now }), checkpoint: checkpointRecord(checkpoint) },
  });
  // The checkpoint is an event of the run's aggregate, so the run's version moves with it.
  await tx
    .update(runs)
    .set({ version: current.version + 1, updatedAt: now, leaseExpiresAt: current.leaseExpiresAt })
    .where(eq(runs.id, run.id));
  await appendEvents(tx, actor, events, now);
  return checkpointView(checkpoint);
}

// ---- finish ----------------------------------------------------------------------------------

export interface FinishInput {
  outcome: 'completed' | 'failed';
  summary?: string;
  /** What the run delivered: artifacts of the workspace, not another task's or run's. */
  artifact_ids?: string[];
}

/** The agent's report that the run ended; the task becomes `done` or `failed`. Repeating it is a no-op. */
export async function finishRun(tx: Tx, actor: Actor, runId: string, input: FinishInput): Promise<RunView> {
  const run = await locked(tx, actor, runId);
  assertLeaseHeld(run, new Date());
  const move = input.outcome === 'completed' ? RUN_REPORTS.complete : RUN_REPORTS.fail;
  const v = verdict(move, run.status);
  if (v === 'refuse') throw refuse(run, input.outcome === 'completed' ? 'complete' : 'fail');
  if (v === 'apply') {
    const now = new Date();
    const named = await checkRunArtifacts(tx, run, input.artifact_ids ?? []);
    const artifactIds = [...new Set([...run.artifactIds, ...named])];
    const ended: RunRow = { ...run, summary: input.summary ?? null, finishedAt: now, artifactIds };
    await tx.update(runs).set({ summary: ended.summary, artifactIds }).where(eq(runs.id, run.id));
    const changes = moveRun(ended, await taskOf(tx, run), move.to, `run.${input.outcome}`);
    await appendEvents(tx, actor, await writeStatusChanges(tx, actor.workspaceId, changes, now, {}), now);
  }
  return (await loadRunView(tx, actor.workspaceId, runId))!;
}

// ---- heartbeat -------------------------------------------------------------------------------

export interface HeartbeatInput {
  /** A new length for the lease, from now on (5–3600); the run's own when absent. */
  lease_seconds?: number;
}

export interface RunLease {
  runId: string;
  status: RunRow['status'];
  fence: number;
  lease_seconds: number;
  lease_expires_at: string;
  aggregateVersion: number;
}

/**
 * Renews a running run's lease for lease_seconds from now: one `run.lease_renewed` event, so the
 * ledger shows who held the task until when. A run that is not running holds no lease to renew
 * (409 invalid_state_transition); one whose lease lapsed is the service's (409 lease_expired).
 */
export async function heartbeat(tx: Tx, actor: Actor, runId: string, input: HeartbeatInput): Promise<RunLease> {
  const run = await locked(tx, actor, runId);
  const now = new Date();
  assertLeaseHeld(run, now);
  if (run.status !== 'running') throw refuse(run, 'renew the lease of');
  const leaseSeconds = input.lease_seconds ?? run.leaseSeconds;
  const renewed: RunRow = { ...run, leaseSeconds, leaseExpiresAt: leaseUntil(now, leaseSeconds), version: run.version + 1, updatedAt: now };
  await tx
    .update(runs)
    .set({ leaseSeconds, leaseExpiresAt: renewed.leaseExpiresAt, version: renewed.version, updatedAt: now })
    .where(eq(runs.id, run.id));
  await appendEvents(
    tx,
    actor,
    [{ aggregateType: 'run', aggregateId: run.id, eventType: 'run.lease_renewed', payload: runRecord(renewed) }],
    now,
  );
  return {
    runId: run.id,
    status: renewed.status,
    fence: renewed.fence,
    lease_seconds: leaseSeconds,
    lease_expires_at: renewed.leaseExpiresAt!.toISOString(),
    aggregateVersion: renewed.version,
  };
}
