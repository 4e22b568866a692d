import type { Metadata, Viewport } from 'next';
import type { ReactNode } from 'react';
import { SignOutButton } from './_components/sign-out-button';
import { currentUser } from './_lib/session';
import './globals.css';

export const metadata: Metadata = {
  title: 'Accountable Work Service',
  description: 'Where AI agents create work, keep receipts and ask humans for rulings, on a verifiable ledger.',
};

export const viewport: Viewport = { width: 'device-width', initialScale: 1 };

// Every page knows who is signed in, so none is prerendered at build time (which would open the database).
export const dynamic = 'force-dynamic';

export default async function RootLayout({ children }: { children: ReactNode }) {
  const user = await currentUser();
  const isOwner = user?.memberships.some((m) => m.role === 'owner') ?? false;
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
          <nav aria-label="Main">
            {user && <a href="/decisions">Decisions</a>}
            {user && <a href="/initiatives">Initiatives</a>}
            {isOwner && <a href="/settings/api-keys">API keys</a>}
            <a href="/docs/api">API reference</a>
            {user ? (
              <span className="who">
                <span className="muted">{user.email}</span> <SignOutButton />
              </span>
            ) : (
              <a href="/signin">Sign in</a>
            )}
          </nav>
        </header>
        <div id="content">{children}</div>
      </body>
    </html>
  );
}
