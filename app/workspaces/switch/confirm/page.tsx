/**
 * Before showing something of another of the user's workspaces (a deep link such as a decision's
 * resolve_url, a link from before the switch was a form): one button that makes that workspace
 * current (a POST to /workspaces/switch) and opens it. Visiting this page changes nothing, so a
 * link or an image on another site cannot switch anyone's workspace.
 */
import { redirect } from 'next/navigation';
import { safeReturnTo } from '../../../_lib/return-to';
import { currentWorkspace, requireUser, switchTo } from '../../../_lib/session';

export const dynamic = 'force-dynamic';

type Search = { to?: string; return?: string };

export default async function ConfirmSwitchPage({ searchParams }: { searchParams: Promise<Search> }) {
  const params = await searchParams;
  const returnTo = safeReturnTo(params.return);
  const user = await requireUser(switchTo(params.to ?? '', returnTo));
  const { workspaces, current } = await currentWorkspace(user);
  const target = workspaces.find((w) => w.id === params.to);
  // Already there, or not one of theirs: nothing to ask; the page itself says what it can.
  if (!target || !current || target.id === current.id) redirect(returnTo);

  return (
    <main className="narrow">
      <h1>Switch to {target.name}?</h1>
      <p>
        What you opened is in the workspace <strong>{target.name}</strong>, where you are {target.role}. You are looking at{' '}
        <strong>{current.name}</strong>.
      </p>
      <form method="post" action="/workspaces/switch">
        <input type="hidden" name="workspace" value={target.id} />
        <input type="hidden" name="return" value={returnTo} />
        <button type="submit" className="primary">
          Switch to {target.name} to see this
        </button>
      </form>
      <p>
        <a href="/decisions">Stay in {current.name}</a>
      </p>
    </main>
  );
}
