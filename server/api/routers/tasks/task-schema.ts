/** The Task as the API shows it: in POST /work's answer, in GET /tasks and GET /tasks/{id}. */
import { z } from 'zod';
import { taskPriorities, taskStatuses, taskTypes } from '@/db/schema';
import { timestamp } from '../../schemas';

export const taskSchema = z
  .object({
    id: z.uuid(),
    title: z.string(),
    description: z.string().nullable(),
    status: z.enum(taskStatuses),
    priority: z.enum(taskPriorities),
    type: z.enum(taskTypes),
    estimate_hours: z.number().nullable(),
    agent_id: z.string().nullable(),
    depends_on: z.array(z.uuid()).meta({ description: 'Sibling tasks (same milestone) this one waits for.' }),
    initiative_id: z.uuid(),
    workstream_id: z.uuid(),
    milestone_id: z.uuid(),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .meta({ id: 'Task' });
