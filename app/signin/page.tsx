/** Sign in with email and password. */
import { redirect } from 'next/navigation';
import { currentUser } from '../_lib/session';
import { SignInForm } from './signin-form';

export const dynamic = 'force-dynamic';

function safeReturn(url: string | undefined): string {
  // Only paths of this app: never an open redirect to another site.
  return url && url.startsWith('/') && !url.startsWith('//') ? url : '/decisions';
}

export default async function SignInPage({ searchParams }: { searchParams: Promise<{ callbackUrl?: string; error?: string }> }) {
  const params = await searchParams;
  const returnTo = safeReturn(params.callbackUrl);
  if (await currentUser()) redirect(returnTo);
  return (
    <main className="narrow">
      <h1>Sign in</h1>
      <p className="muted">Rule on the decisions your agents raise.</p>
      <SignInForm returnTo={returnTo} />
    </main>
  );
}
