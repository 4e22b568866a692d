/** POST /mcp-servers/{id}/refresh: List the server's tools again. */
import { z } from 'zod';
import { replaceTools, upstreamOf } from '@/server/domain/mcp-servers/servers';
import { listOrRefuse } from '@/server/gateway/refresh';
import { mutationHeaders } from '../../schemas';
import { etag } from '../../versioning';
import { answered, auth, common, serverAnswer, serverPath, serverProcedure, serverSchema } from './shared';

export const refreshProcedure = serverProcedure
  .meta({
    openapi: {
      ...common,
      method: 'POST',
      path: '/mcp-servers/{id}/refresh',
      summary: 'List the server’s tools again',
      description:
        'Asks the server for its tools now. When they differ from those kept (a tool added, removed, or with another ' +
        'schema, description, title or annotations) they replace them, recorded as mcp_server.tools_changed with the ' +
        'names added, removed and changed, and `changed` is true; when they do not, nothing is recorded. A server that ' +
        'cannot be listed is 422 upstream_unavailable and its tools stay as they were. The service also lists a server ' +
        'by itself when the server says its tools changed (notifications/tools/list_changed). Send `{}` as the body.',
      requestHeaders: mutationHeaders,
    },
    auth,
    errorCodes: ['not_found', 'forbidden', 'conflict', 'upstream_unavailable', 'invalid_idempotency_key'],
    successHeaders: { ETag: 'The server’s aggregateVersion, quoted.' },
  })
  .input(serverPath)
  .output(
    serverAnswer(
      z.object({
        server: serverSchema,
        changed: z.boolean().meta({ description: 'Whether the tools listed differ from those kept before (mcp_server.tools_changed).' }),
      }),
      'McpServerRefreshed',
    ),
  )
  .mutation(async ({ ctx, input, actor, write }) => {
    const { db, env, secrets } = ctx.runtime;
    const upstream = await upstreamOf(db, actor.workspaceId, input.id, secrets.webhook);
    // Listed before the transaction: no transaction waits on the upstream.
    const tools = await listOrRefuse(upstream, env.MCP_UPSTREAM_ALLOW_HOSTS);
    const body = await write(async (tx) =>
      answered(actor.workspaceId, await replaceTools(tx, actor, { id: input.id, listing: { tools, from: upstream } }, secrets.webhook)),
    );
    ctx.res.headers.ETag = etag(body.data.server.aggregateVersion);
    return body;
  });
