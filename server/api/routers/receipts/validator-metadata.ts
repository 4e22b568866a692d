/** GET /agent-work-receipts/validate: the public validator's metadata (the validation itself: server/api/receipt-validator.ts). */
import { z } from 'zod';
import { LIMITS, RECEIPT_SCHEMA, RECEIPT_SCHEMA_VERSION } from '@/server/domain/receipts/validate';
import { publicProcedure } from '../../trpc';

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

export const validatorMetadataProcedure = publicProcedure
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
    limitedPerAddress: true,
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
  });
