/**
 * Settings → Tools: the upstream MCP servers the workspace fronts at /mcp, as /api/v1/mcp-servers
 * has them (where each is, its header names, its tools and what a call of each does now, which
 * guard says so), with each server's recent calls (GET /tool-calls). Owners register, change,
 * refresh and remove servers here; other members, whom the API does not let read the servers
 * (their URLs may carry what only owners should see), get the recent calls and who to ask.
 */
import { caller, currentWorkspace, requireUser } from '../../_lib/session';
import { CallsTable } from './calls-table';
import { ToolsManager } from './tools-manager';

export const dynamic = 'force-dynamic';

/** Calls shown per server (the API pages through all of them). */
const RECENT = 20;

export default async function ToolsPage() {
  const user = await requireUser('/settings/tools');
  const { current: workspace } = await currentWorkspace(user);
  if (!workspace) {
    return (
      <main>
        <h1>Tools</h1>
        <p>You are not a member of any workspace yet.</p>
      </main>
    );
  }
  const api = await caller();
  const intro = (
    <p className="muted">
      Workspace <strong>{workspace.name}</strong>. Agents connected to <code>/mcp</code> see the tools of these MCP servers beside the
      service’s own, as <code>server__tool</code>. Each call is run at once, refused, or held for a human’s approval as the server’s guards
      say, and recorded in the ledger. The credential a server needs stays here: agents hold only their own key.
    </p>
  );

  if (workspace.role !== 'owner') {
    const { data: calls } = await api.toolCalls.list({ workspace_id: workspace.id, limit: RECENT });
    return (
      <main>
        <h1>Tools</h1>
        {intro}
        <p className="notice" data-testid="owners-only">
          Only the owners of <strong>{workspace.name}</strong> register MCP servers and set what a call of each tool does; ask one of them
          to change it. You can see the calls agents made.
        </p>
        <h2>Recent calls</h2>
        <CallsTable calls={calls} caption="Recent calls of the workspace’s upstream tools" withServer />
      </main>
    );
  }

  const { data: servers } = await api.mcpServers.list({ workspace_id: workspace.id, limit: 100 });
  const calls = await Promise.all(
    servers.map((s) => api.toolCalls.list({ workspace_id: workspace.id, server_id: s.id, limit: RECENT }).then((page) => page.data)),
  );
  return (
    <main>
      <h1>Tools</h1>
      {intro}
      <ToolsManager
        workspaceId={workspace.id}
        servers={servers.map(({ url, ...s }, i) => ({ ...s, host: new URL(url).host, recent: calls[i]! }))}
      />
    </main>
  );
}
