/**
 * The signed-in person's own account: their password, their delegation while away from the current
 * workspace, their passkeys, and the workspaces they can leave.
 */
import { caller, currentWorkspace, requireUser } from '../../_lib/session';
import { AccountForms } from './account-forms';
import { Passkeys } from './passkeys';
import { Away } from './away';
import { isIP } from 'node:net';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export default async function AccountPage() {
  const user = await requireUser('/settings/account');
  const { workspaces, current } = await currentWorkspace(user);
  // The last owner of a workspace cannot leave it: say so up front instead of offering "Leave".
  const api = await caller();
  const onlyOwner = await Promise.all(
    workspaces.map(async (w) => {
      if (w.role !== 'owner') return false;
      const { members } = await api.members.list({ workspace_id: w.id });
      return members.filter((m) => m.role === 'owner').length === 1;
    }),
  );
  return (
    <main>
      <h1>Your account</h1>
      <p className="muted">
        Signed in as <strong>{user.displayName}</strong> ({user.email}).
      </p>
      <AccountForms email={user.email} workspaces={workspaces.map((w, i) => ({ ...w, onlyOwner: onlyOwner[i]! }))} />
      {current && (current.role === 'owner' || current.role === 'approver') && (
        <Away workspace={{ id: current.id, name: current.name }} {...await api.account.away({ workspace_id: current.id })} />
      )}
      <Passkeys
        passkeys={(await api.account.passkeys()).passkeys}
        available={isIP(new URL((await getRuntime()).env.APP_URL).hostname) === 0}
      />
      <p>
        <a href="/workspaces/new">Create a workspace</a>
      </p>
    </main>
  );
}
