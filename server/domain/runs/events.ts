/**
 * The runs' slice of the event registry and its projection rules. Every run event carries the
 * whole run after it (a status change also its previous status and its cause), so one
 * `runRow(record)` (../hierarchy/records.ts) makes the run's row on the write and on the replay.
 * (Run events from before runs had an API carried less, but only tests could make a run then, and
 * such a ledger never replayed: its first run event changes a run no event created.)
 */
import { z } from 'zod';
import { readBack, type TypedEvent } from '@/server/ledger/event-types';
import { metaOf, must, type ProjectionState, type RulesOf } from '../projection';
import type { StatusEventType } from '../status-changes';
import { checkpointRecordSchema, checkpointRow, runRecordSchema, runRow } from '../hierarchy/records';

const runCreated = runRecordSchema.loose();
/** The run as it stands after a heartbeat: its new lease_expires_at (and lease_seconds, if it changed). */
const runLeaseRenewed = runRecordSchema.loose();
const runStatusChanged = runRecordSchema.extend({ previous_status: z.string() }).loose();
const runCheckpointed = runRecordSchema.extend({ checkpoint: checkpointRecordSchema });

export const runEvents = {
  'run.created': readBack('run', runCreated),
  'run.started': readBack('run', runStatusChanged),
  'run.paused': readBack('run', runStatusChanged),
  'run.resumed': readBack('run', runStatusChanged),
  'run.cancelled': readBack('run', runStatusChanged),
  'run.rolled_back': readBack('run', runStatusChanged),
  /** Its blocking decision resolved without a continuation: still paused, now on its own. */
  'run.released': readBack('run', runStatusChanged),
  'run.completed': readBack('run', runStatusChanged),
  'run.failed': readBack('run', runStatusChanged),
  /** A heartbeat renewed the run's lease (POST /runs/{runId}/heartbeat): the run with its new lease_expires_at. */
  'run.lease_renewed': readBack('run', runLeaseRenewed),
  /** The run's lease lapsed: the service failed it (failure_reason lease_expired) and its task is ready again. */
  'run.lease_expired': readBack('run', runStatusChanged),
  'run.checkpointed': readBack('run', runCheckpointed),
};

/** Every run event carries the whole run after it (events from before fences keep the run's). */
const runChanged = (
  state: ProjectionState,
  event: TypedEvent<Extract<StatusEventType, `run.${string}`> | 'run.checkpointed' | 'run.lease_renewed'>,
) => {
  const before = must(state.runs.get(event.aggregateId), event);
  const row = runRow(event.payload, metaOf(event));
  if (event.payload.fence === undefined) row.fence = before.fence;
  state.runs.set(event.aggregateId, row);
};

export const runRules: RulesOf<typeof runEvents> = {
  // A run created before fences gets its place among its task's runs, as the migration gave it.
  'run.created': (state, event) => {
    const row = runRow(event.payload, metaOf(event));
    if (event.payload.fence === undefined) {
      row.fence = 1 + [...state.runs.values()].filter((r) => r.taskId === row.taskId).length;
    }
    state.runs.set(event.aggregateId, row);
  },
  'run.started': runChanged,
  'run.paused': runChanged,
  'run.resumed': runChanged,
  'run.cancelled': runChanged,
  'run.rolled_back': runChanged,
  'run.released': runChanged,
  'run.completed': runChanged,
  'run.failed': runChanged,
  'run.lease_renewed': runChanged,
  'run.lease_expired': runChanged,
  'run.checkpointed': (state, event) => {
    runChanged(state, event);
    const { checkpoint } = event.payload;
    state.checkpoints.set(checkpoint.checkpoint_id, checkpointRow(checkpoint, event.workspaceId));
  },
};
