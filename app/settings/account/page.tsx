/** The signed-in person's own account: their password, and the workspaces they can leave. */
import { currentWorkspace, requireUser } from '../../_lib/session';
import { AccountForms } from './account-forms';

export const dynamic = 'force-dynamic';

export default async function AccountPage() {
  const user = await requireUser('/settings/account');
  const { workspaces } = await currentWorkspace(user);
  return (
    <main>
      <h1>Your account</h1>
      <p className="muted">
        Signed in as <strong>{user.displayName}</strong> ({user.email}).
      </p>
      <AccountForms email={user.email} workspaces={workspaces} />
      <p>
        <a href="/workspaces/new">Create a workspace</a>
      </p>
    </main>
  );
}
