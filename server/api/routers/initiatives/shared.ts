/** The schemas and helpers the procedures of initiativesRouter share. */
import { z } from 'zod';
import { nodeStatuses, runStatuses, taskPriorities, taskStatuses, taskTypes } from '@/db/schema';
import { AppError } from '@/server/errors';
import { actorIn, defaultWorkspace, type ApiContext, type Principal } from '../../trpc';
import type { Trace } from '@/server/domain/actor';
import { apiMeta, id, jsonNumber, text, timestamp } from '../../schemas';

// ---- schemas -------------------------------------------------------------------------------

export const noSuchInitiative = () => new AppError('not_found', 'No such initiative in your workspace.');

const ref = () =>
  text(1, 100).meta({ description: 'Your name for this node, unique in the request; depends_on refers to siblings by it.' });
const dependsOn = () =>
  z
    .array(text(1, 100))
    .max(100)
    .optional()
    .meta({ description: 'Refs of sibling nodes this one waits for (workstreams of the same initiative, tasks of the same milestone).' });

const taskInput = z.strictObject({
  ref: ref().optional(),
  title: text(1, 240),
  description: text(0, 4000).optional(),
  type: z.enum(taskTypes).default('build'),
  priority: z.enum(taskPriorities).default('medium'),
  estimate_hours: jsonNumber({ min: 0, max: 100_000 }).optional(),
  agent_id: text(1, 200).optional().meta({ description: 'The agent assigned to the task.' }),
  depends_on: dependsOn(),
});

const milestoneInput = z.strictObject({
  ref: ref().optional(),
  title: text(1, 200),
  tasks: z.array(taskInput).max(500).optional(),
});

const workstreamInput = z.strictObject({
  ref: ref().optional(),
  name: text(1, 200),
  goal: text(0, 2000).optional(),
  domain: text(1, 100).optional().meta({ description: 'Default `general`.' }),
  agent_id: text(1, 200).optional().meta({ description: 'The agent assigned to the workstream.' }),
  depends_on: dependsOn(),
  milestones: z.array(milestoneInput).max(100).optional(),
});

export const createInput = z
  .strictObject({
    workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace; another is 403).' }),
    title: text(1, 200),
    summary: text(0, 4000).optional(),
    visibility: z.enum(['private', 'workspace']).default('workspace'),
    model_tier: z.enum(['economy', 'standard', 'premium']).default('standard'),
    execution_policy: z
      .strictObject({
        mode: z.enum(['sequential', 'parallel', 'manual']).default('sequential'),
        max_concurrent_agents: jsonNumber({ int: true, min: 1, max: 100 }).default(1),
      })
      .default({ mode: 'sequential', max_concurrent_agents: 1 }),
    workstreams: z.array(workstreamInput).max(100).optional(),
  })
  .meta({
    description:
      'An initiative, optionally with its whole tree: workstreams → milestones → tasks. `depends_on` names siblings by ' +
      '`ref`; an unknown ref, a node depending on itself or a cycle is 400 with the path. At most 2000 nodes.',
  });

export const initiativeSchema = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    title: z.string(),
    status: z.enum(nodeStatuses),
    summary: z.string(),
    visibility: z.enum(['private', 'workspace']),
    model_tier: z.enum(['economy', 'standard', 'premium']),
    execution_policy: z.object({ mode: z.enum(['sequential', 'parallel', 'manual']), max_concurrent_agents: z.int() }),
    is_inbox: z.boolean(),
    aggregateVersion: z.int().meta({ description: 'The initiative’s aggregateVersion in the ledger (1 on creation, +1 per change).' }),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .meta({ id: 'Initiative' });

const taskNode = z.object({
  id: z.uuid(),
  title: z.string(),
  status: z.enum(taskStatuses),
  type: z.enum(taskTypes),
  priority: z.enum(taskPriorities),
  agent_id: z.string().nullable(),
  estimate_hours: z.number().nullable(),
  depends_on: z.array(z.uuid()),
});
const milestoneNode = z.object({
  id: z.uuid(),
  title: z.string(),
  status: z.enum(nodeStatuses),
  estimate_hours: z.number().meta({ description: 'Sum of its tasks’ estimate_hours.' }),
  tasks: z.array(taskNode),
});
const workstreamNode = z.object({
  id: z.uuid(),
  name: z.string(),
  goal: z.string(),
  status: z.enum(nodeStatuses),
  domain: z.string(),
  agent_id: z.string().nullable(),
  depends_on: z.array(z.uuid()),
  estimate_hours: z.number().meta({ description: 'Sum of its milestones’ estimate_hours.' }),
  milestones: z.array(milestoneNode),
});
const treeSchema = z
  .object({
    workstreams: z.array(workstreamNode),
    edges: z
      .array(z.object({ level: z.enum(['workstream', 'task']), from: z.uuid(), to: z.uuid() }))
      .meta({ description: 'Dependency edges: `to` waits for `from`.' }),
    agents: z
      .array(z.object({ agent_id: z.string(), workstreams: z.array(z.uuid()), tasks: z.array(z.uuid()) }))
      .meta({ description: 'Agent assignments.' }),
    estimate_hours: z.number().meta({ description: 'Sum over the whole tree.' }),
  })
  .meta({ id: 'InitiativeTree' });

const initiativeMeta = apiMeta.extend({
  projectionStatus: z
    .enum(['live_rows', 'replayed'])
    .meta({ description: '`live_rows`: read from the tables; `replayed`: rebuilt from the ledger.' }),
  notes: z.array(z.string()).optional(),
});

export const createOutput = z
  .object({
    data: z.object({
      initiative: initiativeSchema,
      tree: treeSchema,
      refs: z.record(z.string(), z.uuid()).meta({ description: 'Each ref you sent, with the id it was given.' }),
    }),
    meta: initiativeMeta.extend({ duplicate: z.boolean().meta({ description: 'true on an idempotent replay.' }) }),
  })
  .meta({ id: 'CreateInitiativeResponse' });
export type CreateBody = z.infer<typeof createOutput>;

export const INCLUDES = ['tree', 'launches'] as const;

export const getInput = z.strictObject({
  initiativeId: id(),
  workspace_id: id().optional().meta({ description: 'Optional for a workspace-bound API key; another workspace’s is 403.' }),
  include: z
    .string()
    .max(100)
    .optional()
    .meta({ description: 'Comma-separated: `tree` (workstreams, milestones, tasks, edges, agents, estimates), `launches`.' }),
});

export const getOutput = z
  .object({
    data: z.object({
      initiative: initiativeSchema,
      tree: treeSchema.optional(),
      launches: z.array(z.record(z.string(), z.unknown())).optional(),
    }),
    meta: initiativeMeta,
  })
  .meta({ id: 'InitiativeResponse' });

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
      totalProcesses: z.int(),
    }),
    meta: apiMeta.extend({
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

// ---- helpers -------------------------------------------------------------------------------

export type Caller = ApiContext & { principal: Principal; trace: Trace };

/** The workspace a read concerns: the one named (403 if not the caller's), else the caller's default. */
export function readWorkspace(ctx: Caller, named: string | undefined): string {
  const workspaceId = named ?? defaultWorkspace(ctx.principal);
  actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden' });
  return workspaceId;
}

export function parseIncludes(raw: string | undefined): Set<(typeof INCLUDES)[number]> {
  const out = new Set<(typeof INCLUDES)[number]>();
  if (raw === undefined || raw.trim() === '') return out;
  for (const part of raw.split(',').map((p) => p.trim())) {
    const known = INCLUDES.find((i) => i === part);
    if (!known) {
      throw new AppError('validation_failed', `include: unknown value ${JSON.stringify(part)}; use tree, launches.`, {
        issues: [{ path: 'include', message: `unknown value ${JSON.stringify(part)} (allowed: tree, launches)` }],
      });
    }
    out.add(known);
  }
  return out;
}

// ---- procedures ----------------------------------------------------------------------------
