/** Creating a workspace: the signed-in user names it and becomes its owner. */
import { requireUser } from '../../_lib/session';
import { NewWorkspaceForm } from './new-workspace-form';

export const dynamic = 'force-dynamic';

export default async function NewWorkspacePage() {
  await requireUser('/workspaces/new');
  return (
    <main className="narrow">
      <h1>New workspace</h1>
      <p className="muted">
        A workspace has its own ledger, decisions, initiatives, API keys and members. You will be its owner; invite others from its Members
        page.
      </p>
      <NewWorkspaceForm />
    </main>
  );
}
