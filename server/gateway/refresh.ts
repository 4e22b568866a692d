/**
 * Listing an upstream's tools for the registry: at registration, on a change of its URL or
 * headers, on POST /mcp-servers/{id}/refresh (listOrRefuse: a failure is the caller's 422), and
 * when the upstream itself says its tools changed (refreshServerTools: nobody waits on that one,
 * so a failure is kept on the server as its last_error). The listing goes over the network, so
 * it is made before the transaction that takes its tools.
 */
import type { UpstreamTool } from '@/db/schema';
import { systemActor } from '@/server/domain/actor';
import { noteListingFailed, replaceTools, upstreamOf, type Listing, type McpServerView } from '@/server/domain/mcp-servers/servers';
import { AppError } from '@/server/errors';
import { describeError, log } from '@/server/log';
import { canonicalJson } from '@/server/ledger/canonical';
import type { Runtime } from '@/server/runtime';
import { listUpstreamTools, UpstreamError } from './upstream';

/** Who changes a server's tools when its upstream says they changed. */
const GATEWAY_ACTOR = 'system:mcp-gateway';

/** The upstream's tools as it lists them now; 422 upstream_unavailable saying why when it cannot be listed. */
export async function listOrRefuse(
  target: { url: string; headers: Record<string, string>; timeoutMs: number },
  allowHosts: string[],
): Promise<UpstreamTool[]> {
  try {
    return await listUpstreamTools(target, allowHosts);
  } catch (e) {
    if (!(e instanceof UpstreamError)) throw e;
    // The client's message names the server (its host and port, never the path or query) and says what went wrong.
    const why = /[.!?]$/.test(e.message) ? e.message : `${e.message}.`;
    throw new AppError('upstream_unavailable', `${why} Its tools could not be listed, so nothing was written.`);
  }
}

/**
 * For a change of a server (PATCH): its tools listed at the new URL or with the new headers (422
 * when they cannot be, so a change that would cut the server off is refused), with the upstream
 * as it was, for the transaction to check nobody changed it meanwhile; undefined when neither
 * the URL nor the headers change. `url` is checked already (checkUpstreamUrl).
 */
export async function listingForChange(
  runtime: Pick<Runtime, 'db' | 'env' | 'secrets'>,
  workspaceId: string,
  id: string,
  change: { url?: string; headers?: Record<string, string> | null; timeoutMs?: number },
): Promise<Listing | undefined> {
  if (change.url === undefined && change.headers === undefined) return undefined;
  const current = await upstreamOf(runtime.db, workspaceId, id, runtime.secrets.webhook);
  const url = change.url ?? current.url;
  const headers = change.headers === undefined ? current.headers : (change.headers ?? {});
  if (url === current.url && canonicalJson(headers) === canonicalJson(current.headers)) return undefined;
  const tools = await listOrRefuse(
    { url, headers, timeoutMs: change.timeoutMs ?? current.timeoutMs },
    runtime.env.MCP_UPSTREAM_ALLOW_HOSTS,
  );
  return { tools, from: current };
}

type RefreshOutcome =
  | { status: 'changed' | 'unchanged'; server: McpServerView }
  /** It could not be listed: `error` says why, and is kept as the server's last_error. */
  | { status: 'failed'; error: string }
  /** Its URL or headers changed while it was listed: that change listed it anew. */
  | { status: 'superseded' }
  /** Removed meanwhile. */
  | { status: 'gone' };

/**
 * Lists the server's upstream again and takes its tools, as the system actor `system:mcp-gateway`,
 * with `mcp_server.tools_changed` when they differ from those kept. For the gateway, when the
 * upstream sends notifications/tools/list_changed. Never throws for the upstream's sake.
 */
export async function refreshServerTools(runtime: Runtime, workspaceId: string, serverId: string): Promise<RefreshOutcome> {
  const secret = runtime.secrets.webhook;
  try {
    const upstream = await upstreamOf(runtime.db, workspaceId, serverId, secret);
    let tools: UpstreamTool[];
    try {
      tools = await listUpstreamTools(upstream, runtime.env.MCP_UPSTREAM_ALLOW_HOSTS);
    } catch (e) {
      if (!(e instanceof UpstreamError)) throw e;
      await noteListingFailed(runtime.db, workspaceId, serverId, e.message);
      return { status: 'failed', error: e.message };
    }
    return await runtime.db.transaction(async (tx) => {
      const actor = await systemActor(tx, workspaceId, GATEWAY_ACTOR);
      const { server, changed } = await replaceTools(tx, actor, { id: serverId, listing: { tools, from: upstream } }, secret);
      return { status: changed ? 'changed' : 'unchanged', server } as const;
    });
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') return { status: 'gone' };
    if (e instanceof AppError && e.code === 'conflict') return { status: 'superseded' };
    throw e;
  }
}

/**
 * What the gateway's upstream connections call when an upstream says its tools changed: the server
 * listed again (refreshServerTools), one listing at a time per server. Notifications that arrive
 * while one runs make one more listing after it, not one each: an upstream that changes its tools
 * ten times in a second is listed twice.
 */
export function refreshOnToolsChanged(runtime: Runtime): (key: { workspaceId: string; serverId: string }) => void {
  const state = new Map<string, 'running' | 'again'>();
  const run = (workspaceId: string, serverId: string): void => {
    state.set(serverId, 'running');
    refreshServerTools(runtime, workspaceId, serverId)
      .then(
        (outcome) => log('info', 'mcp upstream tools refreshed', { serverId, status: outcome.status }),
        (err: unknown) => log('error', 'mcp upstream tools refresh failed', { serverId, error: describeError(err) }),
      )
      .finally(() => {
        if (state.get(serverId) === 'again') run(workspaceId, serverId);
        else state.delete(serverId);
      });
  };
  return ({ workspaceId, serverId }) => {
    if (state.has(serverId)) state.set(serverId, 'again');
    else run(workspaceId, serverId);
  };
}
