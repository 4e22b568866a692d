/** GET /tool-calls: the gateway's calls of upstream tools, newest first. */
import { z } from 'zod';
import { guardModes, toolCallStatuses } from '@/db/schema';
import { listToolCalls } from '@/server/domain/tool-calls/calls';
import { openList, pageMeta, pageOf, pageParams } from '../../keyset';
import { memberProcedure } from '../../procedures';
import { id, timestamp } from '../../schemas';

const digest = () => z.string().regex(/^sha256:[0-9a-f]{64}$/);

const toolCallSchema = z
  .object({
    id: z.uuid(),
    server_id: z.uuid(),
    server: z.string().meta({ description: 'The server’s name when the call was made (it may have been renamed or removed since).' }),
    tool: z.string().meta({ description: 'The upstream tool’s own name (agents call it as `<server>__<tool>`).' }),
    mode: z.enum(guardModes).meta({ description: 'What the server’s guard said of the call: allow, ask or deny.' }),
    status: z.enum(toolCallStatuses).meta({
      description:
        '`forwarded`: sent, no answer recorded yet (or the service stopped before it came); `returned`: the upstream ' +
        'answered or failed (`is_error`); `refused`: never sent (`reason`).',
    }),
    reason: z.string().nullable().meta({
      description:
        'refused: `denied` (its guard), `declined`, `expired`, `cancelled` (its ruling), `server_removed` (approved, but its server was removed meanwhile), or the grant’s refusal code.',
    }),
    arguments_digest: digest().meta({ description: '`sha256:` + hex SHA-256 of the RFC 8785 JSON of the arguments sent (or refused).' }),
    key_id: z.string().meta({ description: 'The API key that made the call.' }),
    run_id: z.uuid().nullable().meta({ description: 'The run the call named (`_meta.run_id`).' }),
    decision_id: z.uuid().nullable().meta({ description: 'ask: the decision the call waited on.' }),
    grant_id: z.uuid().nullable().meta({ description: 'ask, approved: the grant used for the call (its `jti`).' }),
    result_digest: digest().nullable().meta({ description: 'The digest of the result as the upstream answered it; null when none came.' }),
    is_error: z.boolean().nullable(),
    duration_ms: z.int().nullable(),
    called_at: timestamp(),
    returned_at: timestamp().nullable(),
  })
  .meta({ id: 'ToolCall' });

export const listProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/tool-calls',
      tags: ['mcp-servers'],
      summary: 'List the gateway’s tool calls',
      description:
        'Every call an agent made through the MCP gateway to a tool of an upstream server, newest first, filtered by ' +
        'server, decision or run, paged by cursor. A call holds digests of its arguments and result, never them: the ' +
        'arguments an approver saw are the decision’s action. Each call is also in the ledger as tool_call.* events.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(
    z.strictObject({
      server_id: id().optional(),
      decision_id: id().optional(),
      run_id: id().optional(),
      ...pageParams,
    }),
  )
  .output(z.object({ data: z.array(toolCallSchema), meta: pageMeta }).meta({ id: 'ToolCallPage' }))
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { scope, after } = openList(ctx, workspaceId, 'tool-calls', input);
    const { db, secrets } = ctx.runtime;
    const rows = await listToolCalls(db, workspaceId, {
      serverId: input.server_id,
      decisionId: input.decision_id,
      runId: input.run_id,
      after,
      limit: input.limit + 1,
    });
    const { page, meta } = pageOf(rows, (r) => r.key, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return { data: page.map(({ key: _key, ...view }) => view), meta };
  });
