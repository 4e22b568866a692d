/** POST /mcp-servers: Register an upstream MCP server (its tools listed now, its headers sealed). */
import { z } from 'zod';
import { checkRoom, registerServer } from '@/server/domain/mcp-servers/servers';
import { listOrRefuse } from '@/server/gateway/refresh';
import { checkUpstreamUrl } from '@/server/gateway/upstream-url';
import { ownerProcedure } from '../../procedures';
import { id, mutationHeaders } from '../../schemas';
import { etag } from '../../versioning';
import { answered, auth, common, limits, serverFields as f, serverResponse } from './shared';

export const registerProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'POST',
      path: '/mcp-servers',
      summary: 'Register an upstream MCP server',
      description:
        'The service fronts the server (Streamable HTTP): agents connected to /mcp see its tools as `<name>__<tool>` ' +
        'beside the service’s own, and each call is forwarded, refused or put to a human ruling as the guards say. The ' +
        'credential the server needs goes in `headers`, kept here only (encrypted), so no agent can reach a guarded tool ' +
        'around the gateway. The server is listed now: one that cannot be listed (down, refusing the headers, not an MCP ' +
        'server) is 422 upstream_unavailable and nothing is written. A name already registered is 409 conflict naming ' +
        `that server (\`details.id\`). ${limits} Recorded as mcp_server.registered: where the URL goes and its digest, ` +
        'the header names, the guards and each tool’s schema digest; never a header’s value or the URL. An ' +
        'Idempotency-Key is checked but not replayed: a repeated registration is the 409 that names the first.',
      requestHeaders: mutationHeaders,
    },
    auth,
    successStatus: 201,
    errorCodes: ['forbidden', 'conflict', 'upstream_unavailable', 'invalid_idempotency_key'],
    successHeaders: { ETag: 'The server’s aggregateVersion, quoted.' },
  })
  .input(
    z.strictObject({
      workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace); a human’s default is their first.' }),
      name: f.name,
      url: f.url,
      headers: f.headers.optional(),
      guards: f.guards.default([]),
      default_mode: f.default_mode.default('ask'),
      timeout_ms: f.timeout_ms.default(60_000),
    }),
  )
  .output(serverResponse)
  .mutation(async ({ ctx, input, actor, write }) => {
    const { db, env, secrets } = ctx.runtime;
    // Resolved and listed before the transaction: no transaction waits on DNS or the upstream.
    const url = await checkUpstreamUrl(input.url, env.MCP_UPSTREAM_ALLOW_HOSTS);
    // A taken name or a full workspace is answered without asking the upstream (checked again under the lock).
    await checkRoom(db, actor.workspaceId, input.name);
    const headers = input.headers ?? null;
    const tools = await listOrRefuse({ url, headers: headers ?? {}, timeoutMs: input.timeout_ms }, env.MCP_UPSTREAM_ALLOW_HOSTS);
    const body = await write(async (tx) =>
      answered(
        actor.workspaceId,
        await registerServer(
          tx,
          actor,
          { name: input.name, url, headers, guards: input.guards, defaultMode: input.default_mode, timeoutMs: input.timeout_ms, tools },
          secrets.webhook,
        ),
      ),
    );
    ctx.res.headers.ETag = etag(body.data.aggregateVersion);
    return body;
  });
