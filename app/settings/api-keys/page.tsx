/** API keys of a workspace, for its owners: create (shown once), list by prefix, revoke. */
import { caller, requireUser, workspacesOf } from '../../_lib/session';
import { ApiKeysManager } from './api-keys-manager';

export const dynamic = 'force-dynamic';

export default async function ApiKeysPage({ searchParams }: { searchParams: Promise<{ workspace?: string }> }) {
  const params = await searchParams;
  const user = await requireUser('/settings/api-keys');
  const owned = (await workspacesOf(user)).filter((w) => w.role === 'owner');
  const workspace = owned.find((w) => w.id === params.workspace) ?? owned[0];
  if (!workspace) {
    return (
      <main>
        <h1>API keys</h1>
        <p>Only workspace owners manage API keys.</p>
      </main>
    );
  }
  const keys = await (await caller()).apiKeys.list({ workspace_id: workspace.id });
  return (
    <main>
      <h1>API keys</h1>
      <p className="muted">
        Workspace <strong>{workspace.name}</strong>. Agents send a key as <code>Authorization: Bearer …</code>. A key is shown once, when it
        is created; only its hash is kept.
      </p>
      {owned.length > 1 && (
        <form className="toolbar" method="get">
          <label>
            Workspace
            <select name="workspace" defaultValue={workspace.id}>
              {owned.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Show</button>
        </form>
      )}
      <ApiKeysManager workspaceId={workspace.id} keys={keys} />
    </main>
  );
}
