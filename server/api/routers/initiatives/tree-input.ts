/**
 * The body of POST /initiatives: an initiative, optionally with its whole tree (workstreams →
 * milestones → tasks), siblings naming each other by `ref`.
 */
import { z } from 'zod';
import { taskPriorities, taskTypes } from '@/db/schema';
import { id, jsonNumber, text } from '../../schemas';

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
