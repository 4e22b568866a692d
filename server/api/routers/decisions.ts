/** Decisions: raise (agents and humans), poll and list, ask for attention, and the human ruling. */
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import { continuationStrategies, decisions, decisionShapes, decisionStatuses, decisionUrgencies } from '@/db/schema';
import { createDecision } from '@/server/domain/decisions/create-decision';
import { inboxCounts, inboxDecisions, listDecisions } from '@/server/domain/decisions/list';
import { notifyApprovers } from '@/server/domain/decisions/notify-approvers';
import { POLL_AFTER_MS, requestAttention } from '@/server/domain/decisions/request-attention';
import { RULING_ROLES, ruleOnDecision } from '@/server/domain/decisions/rule';
import { expireIfDue, sweepDecisionTimeouts } from '@/server/domain/decisions/timeouts';
import { decisionViews, loadDecisionView, type DecisionRow as Row, type DecisionView } from '@/server/domain/decisions/view';
import type { Actor, Trace } from '@/server/domain/actor';
import { AppError } from '@/server/errors';
import { decodeKeysetCursor, encodeKeysetCursor } from '@/server/ledger/cursor';
import { runMutation } from '../mutation';
import { actorIn, defaultWorkspace, humanProcedure, memberProcedure, router, type ApiContext, type Principal } from '../trpc';
import { apiMeta, id, jsonBoolean, mutationHeaders, text, timestamp } from '../schemas';

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

const decisionSchema = z
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

const decisionBody = z.object({ decision: decisionSchema }).meta({ id: 'DecisionResponse' });
type DecisionBody = z.infer<typeof decisionBody>;

const createInput = z.strictObject({
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

const attentionInput = z.strictObject({
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

const attentionOutput = z
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

const rulingFields = {
  id: id(),
  note: text(0, 2000).optional().meta({ description: 'Why; shown with the resolution and kept in the ledger.' }),
};

const listQuery = z.strictObject({
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
 * workspace's; a human those of the workspaces they belong to. Anything else is 404.
 */
const noSuchDecision = () => new AppError('not_found', 'No such decision in your workspace.');

async function locate(
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
async function settleTimeout(ctx: ApiContext, row: Row): Promise<void> {
  if (row.status === 'pending' && row.dueAt && row.dueAt.getTime() <= Date.now()) {
    if (await ctx.runtime.db.transaction((tx) => expireIfDue(tx, row.workspaceId, row.id))) ctx.runtime.wakeups.committed(row.workspaceId);
  }
}

async function viewOf(ctx: ApiContext, workspaceId: string, decisionId: string): Promise<DecisionView> {
  const view = await loadDecisionView(ctx.runtime.db, workspaceId, decisionId);
  if (!view) throw new AppError('not_found', 'No such decision in your workspace.');
  return view;
}

const listScope = (workspaceId: string) => `decisions|${workspaceId}`;

// ---- procedures ----------------------------------------------------------------------------

export const decisionsRouter = router({
  create: memberProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/decisions',
        tags: ['decisions'],
        summary: 'Raise a decision for a human ruling',
        description:
          'Only `workspace_id` and `title` are required; the decision is then `option_select`, `urgent`, ' +
          '`blocks_task: false`, `pending`, with the options approve / decline. With an `Idempotency-Key`, the same key ' +
          'and body return the original decision (200); a different body is 422 idempotency_conflict.',
        requestHeaders: mutationHeaders,
      },
      auth: ['ApiKey', 'Session'],
      successStatus: 201,
      otherSuccess: { 200: 'Idempotent replay: the original decision.' },
      errorCodes: ['forbidden', 'not_found', 'invalid_idempotency_key', 'idempotency_conflict', 'idempotency_in_progress'],
    })
    .input(createInput)
    .output(decisionBody)
    .mutation(({ ctx, input }) => {
      const { workspace_id: workspaceId, ...rest } = input;
      const actor = actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden', roles: RULING_ROLES });
      return runMutation<DecisionBody>(ctx, actor, { status: 201, replay: (body) => body, output: decisionBody }, async (tx) => ({
        decision: await createDecision(tx, actor, rest),
      }));
    }),

  get: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/decisions/{id}',
        tags: ['decisions'],
        summary: 'Poll a decision',
        description:
          'The poll_url. Shows the resolution once a human has ruled (or the decision timed out), the attention record and the history.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['not_found'],
    })
    .input(z.strictObject({ id: id() }))
    .output(decisionBody)
    .query(async ({ ctx, input }) => {
      const { row } = await locate(ctx, input.id);
      await settleTimeout(ctx, row);
      return { decision: await viewOf(ctx, row.workspaceId, row.id) };
    }),

  list: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/decisions',
        tags: ['decisions'],
        summary: 'List decisions',
        description: 'Newest first, filtered by status and urgency, paged by cursor.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['forbidden', 'invalid_cursor'],
    })
    .input(listQuery)
    .output(
      z
        .object({
          data: z.array(decisionSchema),
          meta: apiMeta.extend({ nextCursor: z.string().nullable(), hasMore: z.boolean(), limit: z.int() }),
        })
        .meta({ id: 'DecisionPage' }),
    )
    .query(async ({ ctx, input }) => {
      const workspaceId = input.workspace_id ?? defaultWorkspace(ctx.principal);
      actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden' });
      const { db, secrets } = ctx.runtime;
      let after: { createdAt: Date; id: string } | undefined;
      if (input.cursor !== undefined) {
        const values = decodeKeysetCursor(secrets.cursor, listScope(workspaceId), input.cursor, 2);
        if (!values) throw new AppError('invalid_cursor', 'This cursor was not issued for this list in your workspace.');
        after = { createdAt: new Date(values[0]!), id: values[1]! };
      }
      await sweepDecisionTimeouts(db, { workspaceId, onCommitted: (id) => ctx.runtime.wakeups.committed(id) });
      const rows = await listDecisions(db, workspaceId, { status: input.status, urgency: input.urgency, after, limit: input.limit + 1 });
      const hasMore = rows.length > input.limit;
      const page = rows.slice(0, input.limit);
      const last = page[page.length - 1];
      return {
        data: await decisionViews(db, workspaceId, page),
        meta: {
          apiVersion: '1' as const,
          workspaceId,
          nextCursor:
            hasMore && last ? encodeKeysetCursor(secrets.cursor, listScope(workspaceId), [last.createdAt.toISOString(), last.id]) : null,
          hasMore,
          limit: input.limit,
        },
      };
    }),

  requestAttention: memberProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/decisions/{id}/attention',
        tags: ['decisions'],
        summary: 'Ask a human to look at a pending decision',
        description:
          'Creates the attention record, or refreshes it: attention_id and requested_at are kept, request_count ' +
          'advances, and the fields sent replace those stored (fields left out keep their value). Workspace, initiative ' +
          'and run are read from the decision; any other field is 400 unknown_field. Idempotency-Key is accepted for ' +
          'forward compatibility only.',
        requestHeaders: mutationHeaders,
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['not_found', 'forbidden', 'decision_not_pending', 'invalid_idempotency_key'],
    })
    .input(attentionInput)
    .output(attentionOutput)
    .mutation(async ({ ctx, input }) => {
      const { id: decisionId, ...fields } = input;
      const { actor, row } = await locate(ctx, decisionId, RULING_ROLES);
      await settleTimeout(ctx, row);
      const answer = await runMutation(ctx, actor, { status: 200, output: attentionOutput }, async (tx) => {
        const result = await requestAttention(tx, actor, decisionId, fields);
        const d = result.decision;
        return {
          data: {
            decision_id: d.id,
            status: 'pending' as const,
            attention_id: result.attention.attention_id,
            request_count: result.attention.request_count,
            requested_at: result.attention.requested_at,
            blocking: { run_id: d.runId, initiative_id: d.initiativeId, workstream_id: d.workstreamId },
            poll_url: `/api/v1/decisions/${d.id}`,
            resolve_url: `${ctx.runtime.env.APP_URL.replace(/\/$/, '')}/decisions/${d.id}`,
            poll_after_ms: POLL_AFTER_MS[d.urgency],
          },
          meta: { apiVersion: '1' as const, workspaceId: d.workspaceId, duplicate: result.repeated },
        };
      });
      // Committed: mail the approvers and owners, without making the agent wait for SMTP.
      void notifyApprovers(ctx.runtime, decisionId);
      return answer;
    }),

  approve: humanProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/decisions/{id}/approve',
        tags: ['decisions'],
        summary: 'Approve a decision (signed-in humans)',
        description:
          'For a signed-in owner or approver of the decision’s workspace, from the app’s own pages; an API key gets 403 ' +
          'human_session_required. option_select: choose exactly one option (the default approve / decline pair needs ' +
          'none); option_multiselect: at least one. Whoever raised a decision cannot rule on it.',
      },
      auth: ['Session'],
      errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending'],
    })
    .input(z.strictObject({ ...rulingFields, option_ids: z.array(text(1, 120)).max(20).optional() }))
    .output(decisionBody)
    .mutation(async ({ ctx, input }) => {
      const { actor, row } = await locate(ctx, input.id, RULING_ROLES);
      await settleTimeout(ctx, row);
      return runMutation(ctx, actor, { status: 200, output: decisionBody }, async (tx) => {
        await ruleOnDecision(tx, actor, input.id, { outcome: 'approved', option_ids: input.option_ids, note: input.note });
        return { decision: (await loadDecisionView(tx, row.workspaceId, row.id))! };
      });
    }),

  decline: humanProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/decisions/{id}/decline',
        tags: ['decisions'],
        summary: 'Decline a decision (signed-in humans)',
        description: 'For a signed-in owner or approver of the decision’s workspace; an API key gets 403 human_session_required.',
      },
      auth: ['Session'],
      errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending'],
    })
    .input(z.strictObject(rulingFields))
    .output(decisionBody)
    .mutation(async ({ ctx, input }) => {
      const { actor, row } = await locate(ctx, input.id, RULING_ROLES);
      await settleTimeout(ctx, row);
      return runMutation(ctx, actor, { status: 200, output: decisionBody }, async (tx) => {
        await ruleOnDecision(tx, actor, input.id, { outcome: 'declined', note: input.note });
        return { decision: (await loadDecisionView(tx, row.workspaceId, row.id))! };
      });
    }),

  cancel: humanProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/decisions/{id}/cancel',
        tags: ['decisions'],
        summary: 'Cancel a decision (signed-in owners)',
        description:
          'Withdraws a pending decision: status `cancelled`, with a resolution and a `decision.cancelled` event. For a ' +
          'signed-in owner of the decision’s workspace (who may cancel a decision they raised); an API key gets 403 ' +
          'human_session_required.',
      },
      auth: ['Session'],
      errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending'],
    })
    .input(z.strictObject(rulingFields))
    .output(decisionBody)
    .mutation(async ({ ctx, input }) => {
      const { actor, row } = await locate(ctx, input.id, ['owner']);
      await settleTimeout(ctx, row);
      return runMutation(ctx, actor, { status: 200, output: decisionBody }, async (tx) => {
        await ruleOnDecision(tx, actor, input.id, { outcome: 'cancelled', note: input.note });
        return { decision: (await loadDecisionView(tx, row.workspaceId, row.id))! };
      });
    }),

  /** The human inbox (UI only): pending first by urgency and age, with counts. */
  inbox: humanProcedure
    .input(
      z.strictObject({
        workspace_id: id().optional(),
        status: z.array(z.enum(decisionStatuses)).optional(),
        urgency: z.array(z.enum(decisionUrgencies)).optional(),
      }),
    )
    .query(async ({ ctx, input }) => {
      const workspaceId = input.workspace_id ?? defaultWorkspace(ctx.principal);
      const actor = actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden' });
      const { db } = ctx.runtime;
      await sweepDecisionTimeouts(db, { workspaceId, onCommitted: (id) => ctx.runtime.wakeups.committed(id) });
      const rows = await inboxDecisions(db, workspaceId, { status: input.status, urgency: input.urgency, limit: 200 });
      return {
        workspaceId,
        role: actor.role!,
        decisions: await decisionViews(db, workspaceId, rows),
        counts: await inboxCounts(db, workspaceId),
      };
    }),
});
