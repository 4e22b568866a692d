/** API keys of a workspace, for its owners: create (shown once), list by prefix, revoke. */
import { ownersOnly } from '../../_components/owners-only';
import { caller } from '../../_lib/session';
import { ApiKeysManager } from './api-keys-manager';

export const dynamic = 'force-dynamic';

export default async function ApiKeysPage() {
  const gate = await ownersOnly('/settings/api-keys', 'API keys', 'its API keys');
  if (gate.refused) return gate.refused;
  const { workspace } = gate;
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
