import type { Metadata, Viewport } from 'next';
import { cache, type ReactNode } from 'react';
import { LiveUpdates } from './_components/live-updates';
import { SignOutButton } from './_components/sign-out-button';
import { WorkspaceSwitcher } from './_components/workspace-switcher';
import { liveState } from './_lib/live';
import { caller, currentUser, currentWorkspace, type WorkspaceView } from './_lib/session';
import './globals.css';

const TITLE = 'Accountable Work Service';

/**
 * Who is signed in, their workspaces (with what waits in each, for the switcher), and the live
 * state of the current one: read once per request.
 */
const pageState = cache(async () => {
  const user = await currentUser();
  const view: WorkspaceView = user ? await currentWorkspace(user) : { workspaces: [], current: null };
  const live = view.current ? await liveState(view.current.id) : null;
  const waiting = view.workspaces.length > 1 ? (await (await caller()).decisions.acrossWorkspaces({})).workspaces : [];
  return { user, view, live, waiting };
});

/** The tab title counts the current workspace's pending decisions (refreshed with the page, see LiveUpdates). */
export async function generateMetadata(): Promise<Metadata> {
  const { live } = await pageState();
  return {
    title: live && live.pending > 0 ? `(${live.pending}) ${TITLE}` : TITLE,
    description: 'Where AI agents create work, keep receipts and ask humans for rulings, on a verifiable ledger.',
  };
}

export const viewport: Viewport = { width: 'device-width', initialScale: 1 };

// Every page knows who is signed in, so none is prerendered at build time (which would open the database).
export const dynamic = 'force-dynamic';

export default async function RootLayout({ children }: { children: ReactNode }) {
  const { user, view, live, waiting } = await pageState();
  const isOwner = view.current?.role === 'owner';
  return (
    <html lang="en">
      <body>
        <a className="skip-link" href="#content">
          Skip to content
        </a>
        <header className="site-header">
          <a href="/" className="brand">
            Accountable Work Service
          </a>
          {view.current && view.workspaces.length > 1 && (
            <WorkspaceSwitcher workspaces={view.workspaces} current={view.current} waiting={waiting} />
          )}
          {view.current && view.workspaces.length === 1 && (
            <span className="workspace-name" aria-label="Workspace">
              {view.current.name}
            </span>
          )}
          <nav aria-label="Main">
            {view.current && <a href="/decisions">Decisions</a>}
            {view.current && <a href="/initiatives">Initiatives</a>}
            {view.current && <a href="/ledger">Ledger</a>}
            {isOwner && <a href="/settings/members">Members</a>}
            {isOwner && <a href="/settings/api-keys">API keys</a>}
            {isOwner && <a href="/settings/webhooks">Webhooks</a>}
            {/* Every member: owners manage the servers there, the others see the calls agents made. */}
            {view.current && <a href="/settings/tools">Tools</a>}
            <a href="/docs/api">API reference</a>
            {user ? (
              <span className="who">
                <a href="/settings/account" className="muted" title={`Your account: ${user.email}`}>
                  {user.email}
                </a>{' '}
                <SignOutButton />
              </span>
            ) : (
              <a href="/signin">Sign in</a>
            )}
          </nav>
        </header>
        {view.current && live && <LiveUpdates workspaceId={view.current.id} cursor={live.cursor} />}
        <div id="content">{children}</div>
      </body>
    </html>
  );
}
