/**
 * Webhook endpoints of a workspace, for its owners: the same operations as /api/v1/webhooks
 * (create with the secret shown once, test, rotate, disable and enable, delete), with each
 * endpoint's recent delivery attempts.
 */
import { ownersOnly } from '../../_components/owners-only';
import { caller } from '../../_lib/session';
import { WebhooksManager } from './webhooks-manager';

export const dynamic = 'force-dynamic';

/** Attempts shown per endpoint (the API pages through all of them). */
const RECENT = 10;

export default async function WebhooksPage() {
  const gate = await ownersOnly('/settings/webhooks', 'Webhooks', 'its webhooks');
  if (gate.refused) return gate.refused;
  const { workspace } = gate;
  const api = await caller();
  const { data: endpoints } = await api.webhooks.list({ workspace_id: workspace.id });
  const deliveries = await Promise.all(endpoints.map((e) => api.webhooks.deliveries({ id: e.id, limit: RECENT })));
  return (
    <main>
      <h1>Webhooks</h1>
      <p className="muted">
        Workspace <strong>{workspace.name}</strong>. Each endpoint receives the ledger’s events of the types it subscribes to, one per
        request, in order, signed per the Standard Webhooks specification. A failing endpoint is retried for 24 hours, then disabled.
      </p>
      <WebhooksManager workspaceId={workspace.id} endpoints={endpoints.map((e, i) => ({ ...e, recent: deliveries[i]!.data }))} />
    </main>
  );
}
