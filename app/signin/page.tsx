/** Sign in with email and password, or a passkey. */
import { redirect } from 'next/navigation';
import { safeReturnTo } from '../_lib/return-to';
import { currentUser } from '../_lib/session';
import { SignInForm } from './signin-form';

export const dynamic = 'force-dynamic';

export default async function SignInPage({ searchParams }: { searchParams: Promise<{ callbackUrl?: string; error?: string }> }) {
  const params = await searchParams;
  const returnTo = safeReturnTo(params.callbackUrl);
  if (await currentUser()) redirect(returnTo);
  return (
    <main className="narrow">
      <h1>Sign in</h1>
      <p className="muted">Rule on the decisions your agents raise.</p>
      <SignInForm returnTo={returnTo} />
    </main>
  );
}
