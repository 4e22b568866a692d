/** PATCH /mcp-servers/{id}: Change an upstream MCP server (If-Match; ETag). */
import { z } from 'zod';
import { updateServer } from '@/server/domain/mcp-servers/servers';
import { listingForChange } from '@/server/gateway/refresh';
import { checkUpstreamUrl } from '@/server/gateway/upstream-url';
import { id } from '../../schemas';
import { etag, ifMatchOf, patchHeaders } from '../../versioning';
import { answered, auth, common, serverFields as f, serverProcedure, serverResponse } from './shared';

export const updateProcedure = serverProcedure
  .meta({
    openapi: {
      ...common,
      method: 'PATCH',
      path: '/mcp-servers/{id}',
      summary: 'Change an upstream MCP server',
      description:
        'Changes the fields given (a JSON merge patch). `headers` replaces the whole set; `null` removes them all. A new ' +
        '`url` or new `headers` are tried first: the server is listed with them, and one that cannot be is 422 ' +
        'upstream_unavailable with nothing changed, so a change never cuts the server off unseen. A new `name` changes ' +
        'the names its tools have at /mcp. Recorded as mcp_server.updated with only what changed (`header_names` when ' +
        'the headers were replaced, never their values), and mcp_server.tools_changed when the listing differs from ' +
        'the tools kept. A patch that changes nothing is 200 and writes nothing. With `If-Match: "<aggregateVersion>"`, ' +
        'a server that has moved past that version is 412 precondition_failed and nothing changes.',
      requestHeaders: patchHeaders,
    },
    auth,
    errorCodes: ['not_found', 'forbidden', 'conflict', 'precondition_failed', 'upstream_unavailable', 'invalid_idempotency_key'],
    successHeaders: { ETag: 'The server’s aggregateVersion after the change, quoted.' },
  })
  .input(
    z.strictObject({
      id: id(),
      name: f.name.optional(),
      url: f.url.optional(),
      headers: f.headers.nullable().optional(),
      guards: f.guards.optional(),
      default_mode: f.default_mode.optional(),
      timeout_ms: f.timeout_ms.optional(),
    }),
  )
  .output(serverResponse)
  .mutation(async ({ ctx, input, actor, write }) => {
    const ifMatch = ifMatchOf(ctx.headers);
    const { env, secrets } = ctx.runtime;
    // Resolved and listed before the transaction: no transaction waits on DNS or the upstream.
    const url = input.url === undefined ? undefined : await checkUpstreamUrl(input.url, env.MCP_UPSTREAM_ALLOW_HOSTS);
    const listing = await listingForChange(ctx.runtime, actor.workspaceId, input.id, {
      url,
      headers: input.headers,
      timeoutMs: input.timeout_ms,
    });
    const body = await write(async (tx) =>
      answered(
        actor.workspaceId,
        await updateServer(
          tx,
          actor,
          {
            id: input.id,
            name: input.name,
            url,
            headers: input.headers,
            guards: input.guards,
            defaultMode: input.default_mode,
            timeoutMs: input.timeout_ms,
            listing,
            ifMatch,
          },
          secrets.webhook,
        ),
      ),
    );
    ctx.res.headers.ETag = etag(body.data.aggregateVersion);
    return body;
  });
