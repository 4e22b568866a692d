/** The schemas and helpers the procedures of decisionsRouter share. */
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import { continuationStrategies, decisions, decisionShapes, decisionStatuses, decisionUrgencies } from '@/db/schema';
import { expireIfDue } from '@/server/domain/decisions/timeouts';
import { loadDecisionView, type DecisionRow as Row, type DecisionView } from '@/server/domain/decisions/view';
import type { Actor, Trace } from '@/server/domain/actor';
import { AppError } from '@/server/errors';
import { actorIn, type ApiContext, type Principal } from '../../trpc';
import { apiMeta, id, jsonBoolean, text, timestamp } from '../../schemas';

// ---- schemas -------------------------------------------------------------------------------

const optionSchema = z
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
export type DecisionBody = z.infer<typeof decisionBody>;

export const createInput = z.strictObject({
  workspace_id: id().meta({ description: 'Your workspace (another workspace’s id is 403).' }),
  title: text(1, 500),
  description: text(0, 8000).optional(),
  shape: z.enum(decisionShapes).default('option_select'),
  urgency: z.enum(decisionUrgencies).default('urgent'),
  blocks_task: jsonBoolean().default(false).meta({ description: 'True when the named task cannot go on without the ruling.' }),
  task_id: id().optional().meta({ description: 'The task the decision is about; initiative and workstream are derived from it.' }),
  run_id: id().optional().meta({ description: 'The run waiting for the ruling (a run of task_id when both are sent).' }),
  due_at: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'When to stop waiting (future). Past it, the decision is expired, or declined (on_timeout).' }),
  on_timeout: z.enum(['expire', 'decline']).default('expire'),
  shape_context: z
    .strictObject({
      options: z
        .array(optionSchema)
        .min(2)
        .max(20)
        .check((ctx) => {
          const ids = ctx.value.map((o) => o.id);
          const dup = ids.find((v, i) => ids.indexOf(v) !== i);
          if (dup !== undefined) ctx.issues.push({ code: 'custom', input: ctx.value, message: `option id ${dup} is repeated` });
        })
        .optional(),
    })
    .optional()
    .meta({
      description: '2 to 20 options with unique ids. option_select and option_multiselect without options get approve / decline.',
    }),
});

export const attentionInput = z.strictObject({
  id: id(),
  recommended_option_id: text(1, 120).optional().meta({ description: 'One of the decision’s shape_context.options[].id.' }),
  recommendation_note: text(0, 2000).optional(),
  impact_if_delayed: text(0, 500).optional(),
  continuation: z
    .strictObject({ strategy: z.enum(continuationStrategies) })
    .optional()
    .meta({
      description:
        'What should happen once the decision is approved: resume_session resumes the run paused for it, restart_task ' +
        're-dispatches its task, manual leaves it to the agent.',
    }),
});

export const attentionOutput = z
  .object({
    data: z.object({
      decision_id: z.uuid(),
      status: z.literal('pending'),
      attention_id: z.uuid(),
      request_count: z.int(),
      requested_at: timestamp(),
      blocking: z.object({ run_id: z.uuid().nullable(), initiative_id: z.uuid().nullable(), workstream_id: z.uuid().nullable() }),
      poll_url: z.string().meta({ description: 'Relative: /api/v1/decisions/<decision_id>.' }),
      resolve_url: z.url().meta({ description: 'Where a human rules: {app_url}/decisions/<decision_id>.' }),
      poll_after_ms: z.int().meta({ description: 'critical 5000, urgent 15000, standard 60000, deferred 300000.' }),
    }),
    meta: apiMeta.extend({ duplicate: z.boolean().meta({ description: 'True when this call refreshed an existing attention record.' }) }),
  })
  .meta({ id: 'AttentionResponse' });

export const rulingFields = {
  id: id(),
  note: text(0, 2000).optional().meta({ description: 'Why; shown with the resolution and kept in the ledger.' }),
};

export const listQuery = z.strictObject({
  workspace_id: id()
    .optional()
    .meta({ description: 'Optional for an API key (its workspace); a signed-in human’s default is their first workspace.' }),
  status: z.array(z.enum(decisionStatuses)).max(5).optional().meta({ description: 'Repeatable.' }),
  urgency: z.array(z.enum(decisionUrgencies)).max(4).optional().meta({ description: 'Repeatable.' }),
  cursor: z.string().max(512).meta({ description: 'meta.nextCursor of the previous page.' }).optional(),
  limit: z.coerce.number().int().min(1).max(100).meta({ description: '1 to 100, default 50.' }).default(50),
});

// ---- helpers -------------------------------------------------------------------------------

/**
 * The decision `id` as the caller may see it, with the actor acting on it. An API key sees its own
 * workspace's; a human those of the workspaces they belong to. Anything else is 404. (actorFor in
 * ../../locate.ts does the same from the workspace alone; a ruling needs the whole row, so it is
 * read here in the same query.)
 */
const noSuchDecision = () => new AppError('not_found', 'No such decision in your workspace.');

export async function locate(
  ctx: ApiContext & { principal: Principal; trace: Trace },
  decisionId: string,
  roles?: readonly ('owner' | 'approver' | 'viewer')[],
): Promise<{ actor: Actor; row: Row }> {
  const { db } = ctx.runtime;
  const [row] = await db.select().from(decisions).where(eq(decisions.id, decisionId));
  if (!row) throw noSuchDecision();
  const actor = actorIn(ctx.principal, ctx.trace, row.workspaceId, { outsider: noSuchDecision, roles });
  return { actor, row };
}

/** Applies an overdue timeout before the caller sees or acts on the decision. */
export async function settleTimeout(ctx: ApiContext, row: Row): Promise<void> {
  if (row.status === 'pending' && row.dueAt && row.dueAt.getTime() <= Date.now()) {
    if (await ctx.runtime.db.transaction((tx) => expireIfDue(tx, row.workspaceId, row.id))) ctx.runtime.wakeups.committed(row.workspaceId);
  }
}

export async function viewOf(ctx: ApiContext, workspaceId: string, decisionId: string): Promise<DecisionView> {
  const view = await loadDecisionView(ctx.runtime.db, workspaceId, decisionId);
  if (!view) throw new AppError('not_found', 'No such decision in your workspace.');
  return view;
}

export const listScope = (workspaceId: string) => `decisions|${workspaceId}`;

// ---- procedures ----------------------------------------------------------------------------
