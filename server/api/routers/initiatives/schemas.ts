/** The initiative and its tree as the API shows them (create's answer, GET /initiatives/{id}, the list). */
import { z } from 'zod';
import { nodeStatuses, taskPriorities, taskStatuses, taskTypes } from '@/db/schema';
import { apiMeta, timestamp } from '../../schemas';

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
export const treeSchema = z
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

export const initiativeMeta = apiMeta.extend({
  projectionStatus: z
    .enum(['live_rows', 'replayed'])
    .meta({ description: '`live_rows`: read from the tables; `replayed`: rebuilt from the ledger.' }),
  notes: z.array(z.string()).optional(),
});
