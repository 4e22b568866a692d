/**
 * Status changes of nodes of the work hierarchy and of runs, written in one statement per table and
 * each recorded as its ledger event. Run control, node actions and the task-follows-its-runs
 * rule all write through here, so every status change has the same event shape and replays the
 * same way (server/domain/hierarchy/events.ts, runs/events.ts).
 */
import { sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import type { NewEvent } from '@/server/ledger/append';
import type { EventType } from '@/server/ledger/event-types';
import { newEvent } from './events';
import { runRecord, type RunRow } from './hierarchy/records';
import { leaseUntil } from './runs/lease';

export const LEVELS = ['initiative', 'workstream', 'milestone', 'task', 'run'] as const;
export type Level = (typeof LEVELS)[number];

/** The event types a status change is recorded as (hierarchy/events.ts, runs/events.ts). */
export type StatusEventType = Extract<
  EventType,
  `${Level}.${'paused' | 'resumed' | 'cancelled' | 'reopened' | 'status_changed' | 'redispatched' | 'started' | 'rolled_back' | 'released' | 'completed' | 'failed' | 'lease_expired'}`
>;

const TABLES: Record<Level, string> = {
  initiative: 'initiatives',
  workstream: 'workstreams',
  milestone: 'milestones',
  task: 'tasks',
  run: 'runs',
};

/** A timestamp parameter for raw SQL (drivers differ in how they send a Date). */
const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;

export interface StatusChange {
  level: Level;
  id: string;
  from: string;
  to: string;
  /** Node-action pause bookkeeping after the change (null: none). */
  pauseId: string | null;
  resumeStatus: string | null;
  eventType: StatusEventType;
  /** Runs only: the run before the change (its event carries the whole run after it). */
  run?: RunRow;
  /** Runs only: the blocking decision it stays paused for, after the change. */
  pausedForDecisionId?: string | null;
  /** Runs only: why the service failed it (its lease lapsed). */
  failureReason?: RunRow['failureReason'];
}

/**
 * The run as it is after `change`, at `now`. A run that starts running (created, started, resumed)
 * takes a new lease of its lease_seconds; a run that stops running gives its lease up (a paused
 * run holds none: server/domain/runs/lease.ts).
 */
export function runAfter(change: StatusChange, now: Date): RunRow {
  const before = change.run;
  if (!before) throw new Error(`run change ${change.id} without its run`);
  const status = change.to as RunRow['status'];
  const leaseExpiresAt =
    status !== 'running' ? null : before.status === 'running' ? before.leaseExpiresAt : leaseUntil(now, before.leaseSeconds);
  return {
    ...before,
    status,
    pauseId: change.pauseId,
    resumeStatus: change.resumeStatus as RunRow['resumeStatus'],
    pausedForDecisionId: change.pausedForDecisionId === undefined ? before.pausedForDecisionId : change.pausedForDecisionId,
    leaseExpiresAt,
    failureReason: change.failureReason ?? null,
    version: before.version + 1,
    updatedAt: now,
  };
}

/**
 * Writes `changes` (one UPDATE per table touched) and returns their ledger events, for the caller
 * to append with its other events in the same transaction. `cause` goes into every payload.
 */
export async function writeStatusChanges(
  tx: Tx,
  workspaceId: string,
  changes: readonly StatusChange[],
  now: Date,
  cause: Record<string, unknown>,
): Promise<NewEvent[]> {
  for (const level of LEVELS) {
    const rows = changes
      .filter((c) => c.level === level)
      .map((c) => {
        const row = { id: c.id, status: c.to, pause_id: c.pauseId, resume_status: c.resumeStatus };
        if (level !== 'run') return row;
        const run = runAfter(c, now);
        return {
          ...row,
          paused_for_decision_id: run.pausedForDecisionId,
          lease_expires_at: run.leaseExpiresAt?.toISOString() ?? null,
          failure_reason: run.failureReason,
          finished_at: run.finishedAt?.toISOString() ?? null,
        };
      });
    if (rows.length === 0) continue;
    const table = sql.identifier(TABLES[level]);
    // A run's change also sets what follows from it: its hold, its lease, how and when it ended.
    const runColumns =
      level === 'run'
        ? sql`, paused_for_decision_id = v.paused_for_decision_id, lease_expires_at = v.lease_expires_at,
              failure_reason = v.failure_reason, finished_at = v.finished_at`
        : sql``;
    await tx.execute(sql`
      update ${table} as t
         set status = v.status, pause_id = v.pause_id, resume_status = v.resume_status${runColumns},
             version = t.version + 1, updated_at = ${at(now)}
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
             as v(id uuid, status text, pause_id uuid, resume_status text, paused_for_decision_id uuid,
                  lease_expires_at timestamptz, failure_reason text, finished_at timestamptz)
       where t.id = v.id and t.workspace_id = ${workspaceId}`);
  }
  return changes.map((c) => statusEvent(c, now, cause));
}

/** The ledger event of one status change (writeStatusChanges gives them for the changes it writes). */
export function statusEvent(c: StatusChange, now: Date, cause: Record<string, unknown>): NewEvent {
  const payload =
    c.level === 'run'
      ? { ...runRecord(runAfter(c, now)), previous_status: c.from, ...cause }
      : { [`${c.level}_id`]: c.id, status: c.to, previous_status: c.from, pause_id: c.pauseId, resume_status: c.resumeStatus, ...cause };
  return newEvent(c.eventType, c.id, payload);
}
