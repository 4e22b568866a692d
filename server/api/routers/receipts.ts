/** The receipt validator's public metadata and schema (the validation itself: receipt-validator.ts). */
import { z } from 'zod';
import { LIMITS, RECEIPT_SCHEMA, RECEIPT_SCHEMA_VERSION } from '@/server/domain/receipts/validate';
import { exportReceipt, receiptWorkspace } from '@/server/domain/receipts/export';
import { AppError } from '@/server/errors';
import { eq } from 'drizzle-orm';
import { importedReceipts } from '@/db/schema';
import { listReceipts } from '@/server/domain/receipts/list';
import { openList, pageMeta, pageOf, pageParams } from '../keyset';
import { actorIn, memberProcedure, publicProcedure, router } from '../trpc';
import { id, timestamp } from '../schemas';

const metadata = z
  .object({
    name: z.literal('Agent Work Receipt'),
    schema_version: z.literal(RECEIPT_SCHEMA_VERSION),
    schema_url: z.url(),
    account_required: z.literal(false),
    persists_submissions: z.literal(false),
    max_bytes: z.literal(LIMITS.max_bytes),
    validation_limits: z.object({
      max_depth: z.literal(LIMITS.max_depth),
      max_nodes: z.literal(LIMITS.max_nodes),
      max_issues: z.literal(LIMITS.max_issues),
      apply_before_schema: z.literal(true),
    }),
    validation_endpoint: z.url(),
    import_endpoint: z.url(),
    endpoints: z.object({ schema: z.url(), validate: z.url(), import: z.url(), export: z.string() }),
    schema: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'ReceiptValidatorMetadata' });

const base = (appUrl: string) => `${appUrl.replace(/\/+$/, '')}/api/v1`;

const noSuchReceipt = () => new AppError('not_found', 'No such receipt in your workspace.');
const receiptSummary = z
  .object({
    id: z.uuid(),
    task_id: z.uuid(),
    status: z.string(),
    summary: z.string(),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .meta({ id: 'ReceiptSummary' });

export const receiptsRouter = router({
  list: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/receipts',
        tags: ['receipts'],
        summary: 'List receipts',
        description:
          'The receipts of the workspace’s tasks, newest first, optionally of one task, paged by cursor. GET /receipts/{id} ' +
          'exports one as a document. Imported receipts are read by their id.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['forbidden', 'invalid_cursor'],
    })
    .input(
      z.strictObject({
        task_id: id().optional(),
        ...pageParams,
      }),
    )
    .output(z.object({ data: z.array(receiptSummary), meta: pageMeta }).meta({ id: 'ReceiptPage' }))
    .query(async ({ ctx, input }) => {
      const { workspaceId, scope, after } = openList(ctx, 'receipts', input);
      const { db, secrets } = ctx.runtime;
      const rows = await listReceipts(db, workspaceId, {
        taskId: input.task_id,
        after,
        limit: input.limit + 1,
      });
      const { page, meta } = pageOf(rows, (r) => r, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
      return {
        data: page.map((r) => ({
          id: r.id,
          task_id: r.taskId,
          status: r.status,
          summary: r.summary,
          created_at: r.createdAt.toISOString(),
          updated_at: r.updatedAt.toISOString(),
        })),
        meta,
      };
    }),

  validatorMetadata: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/agent-work-receipts/validate',
        tags: ['receipts'],
        summary: 'Receipt validator metadata',
        description:
          'What the public validator checks and where. No credential. POST a receipt document to the same path to ' +
          'validate it (200 { ok: true, valid, issues } with at most 100 issues as JSON pointers; 400 input.invalid_json ' +
          'for bad JSON, duplicate keys or __proto__ keys; 413 input.too_large past max_bytes, counted while reading; 422 ' +
          'input.structure_limit past max_depth or max_nodes, checked before the schema). Nothing is stored and no remote ' +
          '$ref is ever fetched. The validator (this metadata, the schema and POST) allows 60 requests a minute per client ' +
          'address (RATE_LIMIT_VALIDATOR_PER_MIN), counted by all instances together; past it 429 rate_limited with ' +
          'Retry-After, and 503 service_unavailable when the counters cannot be kept (never an unlimited pass).',
        protect: false,
      },
      errorCodes: ['rate_limited'],
    })
    .input(z.strictObject({}))
    .output(metadata)
    .query(({ ctx }) => {
      const api = base(ctx.runtime.env.APP_URL);
      return {
        name: 'Agent Work Receipt' as const,
        schema_version: RECEIPT_SCHEMA_VERSION,
        schema_url: `${api}/agent-work-receipts/schema`,
        account_required: false as const,
        persists_submissions: false as const,
        max_bytes: LIMITS.max_bytes,
        validation_limits: {
          max_depth: LIMITS.max_depth,
          max_nodes: LIMITS.max_nodes,
          max_issues: LIMITS.max_issues,
          apply_before_schema: true as const,
        },
        validation_endpoint: `${api}/agent-work-receipts/validate`,
        import_endpoint: `${api}/agent-work-receipts/import`,
        endpoints: {
          schema: `${api}/agent-work-receipts/schema`,
          validate: `${api}/agent-work-receipts/validate`,
          import: `${api}/agent-work-receipts/import`,
          export: `${api}/receipts/{id}`,
        },
        schema: RECEIPT_SCHEMA,
      };
    }),

  schema: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/agent-work-receipts/schema',
        tags: ['receipts'],
        summary: 'The receipt JSON Schema (agent-work-receipt/v0.1)',
        description: 'No credential. Counted in the public validator’s per-address rate limit (see GET /agent-work-receipts/validate).',
        protect: false,
      },
      errorCodes: ['rate_limited'],
    })
    .input(z.strictObject({}))
    .output(z.record(z.string(), z.unknown()))
    .query(() => RECEIPT_SCHEMA),

  export: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/receipts/{receiptId}',
        tags: ['receipts'],
        summary: 'Export a receipt as an agent-work-receipt/v0.1 document',
        description:
          'The document itself (not enveloped), ready to hand to anyone and to POST to /agent-work-receipts/validate: the ' +
          'receipt and its task, the actor, the task’s ledger events with their hashes, the recording event as evidence, ' +
          'and the human rulings on the task’s decisions (who, when, which option, note). An imported receipt is returned ' +
          'exactly as it was imported.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['not_found'],
    })
    .input(z.strictObject({ receiptId: id() }))
    .output(
      z.record(z.string(), z.unknown()).meta({ description: 'An agent-work-receipt/v0.1 document (GET /agent-work-receipts/schema).' }),
    )
    .query(async ({ ctx, input }) => {
      const { db } = ctx.runtime;
      const workspaceId = await receiptWorkspace(db, input.receiptId);
      if (workspaceId) {
        actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: noSuchReceipt });
        const document = await exportReceipt(db, workspaceId, input.receiptId);
        if (document) return document;
      }
      // An imported receipt: its id is the document's, unique per workspace; the caller's workspaces are searched.
      const holders = await db
        .select({ workspaceId: importedReceipts.workspaceId, document: importedReceipts.document })
        .from(importedReceipts)
        .where(eq(importedReceipts.receiptId, input.receiptId));
      const mine = holders.find((h) =>
        ctx.principal.kind === 'api_key'
          ? h.workspaceId === ctx.principal.workspaceId
          : ctx.principal.memberships.some((m) => m.workspaceId === h.workspaceId),
      );
      if (!mine) throw noSuchReceipt();
      return mine.document;
    }),
});
