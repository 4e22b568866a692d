import type { Metadata } from 'next';
import type { ReactNode } from 'react';
import './globals.css';

export const metadata: Metadata = {
  title: 'Accountable Work Service',
  description: 'Where AI agents create work, keep receipts and ask humans for rulings, on a verifiable ledger.',
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <header className="site-header">
          <a href="/" className="brand">
            Accountable Work Service
          </a>
          <nav>
            <a href="/docs/api">API reference</a>
          </nav>
        </header>
        {children}
      </body>
    </html>
  );
}
