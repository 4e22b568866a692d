/**
 * The work hierarchy's slice of the event registry (initiatives, workstreams, milestones, tasks)
 * and its projection rules. A created node's payload is its record (records.ts), and the same
 * `<level>Row(record)` makes its row on the write and on the replay.
 */
import { z } from 'zod';
import { readBack } from '@/server/ledger/event-types';
import type { TypedEvent } from '@/server/ledger/event-types';
import { metaOf, must, touch, type ProjectionState, type RulesOf } from '../projection';
import type { StatusEventType } from '../status-changes';
import {
  initiativeRecordSchema,
  initiativeRow,
  milestoneRecordSchema,
  milestoneRow,
  receiptRecordSchema,
  receiptRow,
  taskRecordSchema,
  taskRow,
  workstreamRecordSchema,
  workstreamRow,
} from './records';

/**
 * A status change of an initiative, workstream, milestone or task (../status-changes.ts). It also
 * carries `<level>_id` and its cause (the action, a reason, the decision…), which nothing reads back.
 */
const nodeStatusChanged = z.looseObject({
  status: z.string(),
  previous_status: z.string(),
  pause_id: z.string().nullable().default(null),
  resume_status: z.string().nullable().default(null),
});

export const hierarchyEvents = {
  'initiative.created': readBack('initiative', initiativeRecordSchema),
  'initiative.paused': readBack('initiative', nodeStatusChanged),
  'initiative.resumed': readBack('initiative', nodeStatusChanged),
  'initiative.cancelled': readBack('initiative', nodeStatusChanged),
  'initiative.reopened': readBack('initiative', nodeStatusChanged),

  'workstream.created': readBack('workstream', workstreamRecordSchema),
  'workstream.paused': readBack('workstream', nodeStatusChanged),
  'workstream.resumed': readBack('workstream', nodeStatusChanged),
  'workstream.cancelled': readBack('workstream', nodeStatusChanged),
  'workstream.reopened': readBack('workstream', nodeStatusChanged),

  'milestone.created': readBack('milestone', milestoneRecordSchema),
  'milestone.paused': readBack('milestone', nodeStatusChanged),
  'milestone.resumed': readBack('milestone', nodeStatusChanged),
  'milestone.cancelled': readBack('milestone', nodeStatusChanged),
  'milestone.reopened': readBack('milestone', nodeStatusChanged),

  'task.created': readBack('task', taskRecordSchema),
  /** POST /work: a task with its receipt. */
  'work.created': readBack('task', z.object({ task: taskRecordSchema, receipt: receiptRecordSchema })),
  /** PATCH /tasks/{id}: each changed field (by its API name), before and after. */
  'task.updated': readBack(
    'task',
    z.object({ task_id: z.string(), changes: z.record(z.string(), z.object({ before: z.unknown(), after: z.unknown() })) }),
  ),
  'task.paused': readBack('task', nodeStatusChanged),
  'task.resumed': readBack('task', nodeStatusChanged),
  'task.cancelled': readBack('task', nodeStatusChanged),
  /** The task following its current run. */
  'task.status_changed': readBack('task', nodeStatusChanged),
  /** Set back to todo for a new run (a retry, a decision's restart_task). */
  'task.redispatched': readBack('task', nodeStatusChanged),
};

/** A row whose status a status change sets (every table of the hierarchy has these columns). */
interface StatusRow {
  status: string;
  pauseId: string | null;
  resumeStatus: string | null;
  version: number;
  updatedAt: Date;
}

/** Status changes of hierarchy nodes (lifecycle actions, and tasks following their runs), in the table `table` picks. */
const nodeStatus =
  (table: (state: ProjectionState) => Map<string, StatusRow>) =>
  (state: ProjectionState, event: TypedEvent<Exclude<StatusEventType, `run.${string}`>>): void => {
    const { status, pause_id, resume_status } = event.payload;
    touch(must(table(state).get(event.aggregateId), event), { status, pauseId: pause_id, resumeStatus: resume_status }, event);
  };
const initiativeStatus = nodeStatus((s) => s.initiatives);
const workstreamStatus = nodeStatus((s) => s.workstreams);
const milestoneStatus = nodeStatus((s) => s.milestones);
const taskStatus = nodeStatus((s) => s.tasks);

/** PATCH /tasks/{id} names the changed fields as the API does; these are their row fields. */
const TASK_FIELDS: Record<string, 'title' | 'description' | 'priority' | 'estimateHours' | 'agentId'> = {
  title: 'title',
  description: 'description',
  priority: 'priority',
  estimate_hours: 'estimateHours',
  agent_id: 'agentId',
};

export const hierarchyRules: RulesOf<typeof hierarchyEvents> = {
  'initiative.created': (state, event) => state.initiatives.set(event.aggregateId, initiativeRow(event.payload, metaOf(event))),
  'initiative.paused': initiativeStatus,
  'initiative.resumed': initiativeStatus,
  'initiative.cancelled': initiativeStatus,
  'initiative.reopened': initiativeStatus,

  'workstream.created': (state, event) => state.workstreams.set(event.aggregateId, workstreamRow(event.payload, metaOf(event))),
  'workstream.paused': workstreamStatus,
  'workstream.resumed': workstreamStatus,
  'workstream.cancelled': workstreamStatus,
  'workstream.reopened': workstreamStatus,

  'milestone.created': (state, event) => state.milestones.set(event.aggregateId, milestoneRow(event.payload, metaOf(event))),
  'milestone.paused': milestoneStatus,
  'milestone.resumed': milestoneStatus,
  'milestone.cancelled': milestoneStatus,
  'milestone.reopened': milestoneStatus,

  'task.created': (state, event) => state.tasks.set(event.aggregateId, taskRow(event.payload, metaOf(event))),
  'work.created': (state, event) => {
    const { task, receipt } = event.payload;
    const meta = metaOf(event);
    state.tasks.set(event.aggregateId, taskRow(task, meta));
    state.receipts.set(receipt.id, receiptRow(receipt, meta));
    state.receiptEvents.set(receipt.id, { eventId: event.id, eventHash: event.eventHash, sequence: event.sequence });
  },
  'task.updated': (state, event) => {
    // Each changed field's value after the change; a name the table has no field for changes nothing.
    const row = must(state.tasks.get(event.aggregateId), event);
    const changes = Object.entries(event.payload.changes).flatMap(([name, c]) =>
      Object.hasOwn(TASK_FIELDS, name) ? [[TASK_FIELDS[name]!, c.after] as const] : [],
    );
    touch(row, Object.fromEntries(changes), event);
  },
  'task.paused': taskStatus,
  'task.resumed': taskStatus,
  'task.cancelled': taskStatus,
  'task.status_changed': taskStatus,
  'task.redispatched': taskStatus,
};
