/** The decision as the API shows it (GET /decisions/{id}, the rulings' answers, lists). */
import { z } from 'zod';
import { decisionShapes, decisionStatuses, decisionUrgencies } from '@/db/schema';
import { text, timestamp } from '../../schemas';

export const optionSchema = z
  .strictObject({
    id: text(1, 120),
    label: text(1, 200),
    description: text(0, 1000).optional(),
  })
  .meta({ id: 'DecisionOption' });

const resolutionSchema = z
  .object({
    outcome: z.enum(['approved', 'declined', 'cancelled', 'expired']),
    option_ids: z.array(z.string()),
    note: z.string().nullable(),
    resolved_by: z.string().meta({ description: 'The user id of the human who ruled, or `system`.' }),
    resolved_by_type: z.enum(['human', 'system']),
    resolved_by_name: z.string().nullable(),
    resolved_at: timestamp(),
  })
  .meta({ id: 'DecisionResolution' });

const attentionSchema = z
  .object({
    attention_id: z.uuid(),
    requested_at: timestamp(),
    last_requested_at: timestamp(),
    request_count: z.int().min(1),
    recommended_option_id: z.string().nullable(),
    recommendation_note: z.string().nullable(),
    impact_if_delayed: z.string().nullable(),
    continuation: z.object({ strategy: z.string() }).nullable(),
  })
  .meta({ id: 'AttentionRecord' });

const historySchema = z.object({
  event_id: z.uuid(),
  event_type: z.string(),
  sequence: z.int(),
  actor_type: z.string(),
  actor_id: z.string(),
  actor_name: z
    .string()
    .nullable()
    .meta({ description: 'Who acted, in words: the human’s display name or the API key’s name (as they are now); null for the system.' }),
  occurred_at: timestamp(),
  event_hash: z.string(),
});

export const decisionSchema = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    title: z.string(),
    description: z.string().nullable(),
    status: z.enum(decisionStatuses),
    shape: z.enum(decisionShapes),
    urgency: z.enum(decisionUrgencies),
    blocks_task: z.boolean(),
    task_id: z.uuid().nullable(),
    run_id: z.uuid().nullable(),
    initiative_id: z.uuid().nullable(),
    workstream_id: z.uuid().nullable(),
    shape_context: z.object({ options: z.array(optionSchema) }),
    due_at: timestamp().nullable(),
    on_timeout: z.enum(['expire', 'decline']),
    resolution: resolutionSchema.nullable(),
    attention: attentionSchema.nullable(),
    history: z.array(historySchema).meta({ description: 'The decision’s ledger events, oldest first.' }),
    created_by: z.object({ type: z.string(), id: z.string() }),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .meta({ id: 'Decision' });

export const decisionBody = z.object({ decision: decisionSchema }).meta({ id: 'DecisionResponse' });
