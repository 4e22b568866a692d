/** API keys of a workspace, for its owners: create (shown once), list by prefix, revoke. */
import { caller, currentWorkspace, requireUser } from '../../_lib/session';
import { ApiKeysManager } from './api-keys-manager';

export const dynamic = 'force-dynamic';

export default async function ApiKeysPage() {
  const user = await requireUser('/settings/api-keys');
  const { current: workspace } = await currentWorkspace(user);
  if (!workspace || workspace.role !== 'owner') {
    return (
      <main>
        <h1>API keys</h1>
        <p>Only the owners of {workspace ? <strong>{workspace.name}</strong> : 'a workspace'} manage its API keys.</p>
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
      <ApiKeysManager workspaceId={workspace.id} keys={keys} />
    </main>
  );
}
