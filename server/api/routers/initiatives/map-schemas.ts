/** The operating map as GET /operating-map answers it: processes, their stages, handoffs and evidence. */
import { z } from 'zod';
import { runStatuses, taskStatuses } from '@/db/schema';
import { apiMeta, timestamp } from '../../schemas';

const stageSchema = z.object({
  workstream_id: z.uuid(),
  name: z.string(),
  status: z.string(),
  domain: z.string(),
  agent_id: z.string().nullable(),
  depends_on: z.array(z.uuid()),
  milestones: z.int(),
  tasks_total: z.int(),
  // An object with every status, not z.record: the record's JSON Schema requires the statuses
  // without defining them (redocly's no-required-schema-properties-undefined).
  task_counts: z
    .object(Object.fromEntries(taskStatuses.map((s) => [s, z.int()])) as Record<(typeof taskStatuses)[number], z.ZodInt>)
    .meta({ description: 'The stage’s tasks by status (every status, 0 when none).' }),
  run_counts: z
    .partialRecord(z.enum(runStatuses), z.int())
    .meta({ description: 'Runs of the stage’s tasks, by status (statuses that occur).' }),
  estimate_hours: z.number(),
});
const handoffSchema = z.union([
  z.object({ kind: z.literal('dependency'), level: z.enum(['workstream', 'task']), from_id: z.uuid(), to_id: z.uuid() }),
  z.object({
    kind: z.literal('decision'),
    decision_id: z.uuid(),
    title: z.string(),
    status: z.string(),
    workstream_id: z.uuid().nullable(),
    task_id: z.uuid().nullable(),
  }),
]);
const evidenceSchema = z.object({
  receipt_id: z.uuid(),
  task_id: z.uuid(),
  summary: z.string(),
  status: z.string(),
  event_id: z.uuid(),
  event_hash: z.string(),
  sequence: z.int(),
});
const processSchema = z
  .object({
    initiative_id: z.uuid(),
    title: z.string(),
    status: z.string(),
    is_inbox: z.boolean(),
    stages: z.array(stageSchema).meta({ description: 'Workstreams, with their tasks counted by status.' }),
    handoffs: z.array(handoffSchema).meta({ description: 'Dependency edges and handoff_route decisions.' }),
    evidence: z.array(evidenceSchema).meta({ description: 'Receipts, with the event that recorded each.' }),
  })
  .meta({ id: 'Process' });

export const mapOutput = z
  .object({
    data: z.object({
      processes: z.array(processSchema).meta({ description: 'One per initiative, newest first, at most `limit`.' }),
      totalProcesses: z
        .int()
        .meta({ deprecated: true, description: 'The same as meta.totalProcesses. Deprecated: it goes in API version 2.' }),
    }),
    meta: apiMeta.extend({
      totalProcesses: z.int().meta({ description: 'Processes (initiatives) in the workspace, beyond the page.' }),
      projectionStatus: z.literal('replayed'),
      replayedAggregates: z.int().meta({
        description:
          'Aggregates the returned processes are made of (initiatives, workstreams, milestones, tasks, runs, decisions), replayed from the ledger.',
      }),
      replayedEvents: z.int().meta({ description: 'Ledger events of those aggregates.' }),
      ledgerHead: z.object({ sequence: z.int(), hash: z.string() }),
      rebuiltAt: timestamp(),
    }),
  })
  .meta({ id: 'OperatingMap' });
