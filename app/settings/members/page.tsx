/**
 * The people of the current workspace, for its owners: members, pending invitations, inviting,
 * which decisions need an approver's passkey, and how long stored artifact bytes are kept.
 */
import { ownersOnly } from '../../_components/owners-only';
import { caller } from '../../_lib/session';
import { MembersManager } from './members-manager';
import { PasskeyPolicy } from './passkey-policy';
import { ArtifactRetention } from './artifact-retention';

export const dynamic = 'force-dynamic';

export default async function MembersPage() {
  const gate = await ownersOnly('/settings/members', 'Members', 'its members');
  if (gate.refused) return gate.refused;
  const { user, workspace } = gate;
  const api = await caller();
  const { members, invitations } = await api.members.list({ workspace_id: workspace.id });
  const settings = await api.workspaces.settings({ workspace_id: workspace.id });
  return (
    <main>
      <h1>Members</h1>
      <p className="muted">
        People of <strong>{workspace.name}</strong>. Owners can do everything; approvers rule on decisions; viewers read. A workspace always
        keeps at least one owner. A change takes effect at the person’s next page or request.
      </p>
      <MembersManager workspaceId={workspace.id} me={user.userId} members={members} invitations={invitations} />
      <PasskeyPolicy workspaceId={workspace.id} urgencies={settings.passkey_urgencies} />
      <ArtifactRetention workspaceId={workspace.id} days={settings.artifact_content_days} storage={settings.artifact_storage} />
    </main>
  );
}
