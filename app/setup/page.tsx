/**
 * First run without the demo: the one-time link `npm start` printed creates the first account and
 * workspace. Without a token, with a token that is not good, or once anyone has an account, 404.
 */
import { notFound } from 'next/navigation';
import { AppError } from '@/server/errors';
import { caller } from '../_lib/session';
import { SetupForm } from './setup-form';

export const dynamic = 'force-dynamic';

export default async function SetupPage({ searchParams }: { searchParams: Promise<{ token?: string | string[] }> }) {
  const { token } = await searchParams;
  if (typeof token !== 'string' || token === '') notFound();
  try {
    await (await caller()).account.setupLink({ token });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof AppError && cause.code === 'rate_limited') {
      return (
        <main className="narrow">
          <h1>Set up</h1>
          <p role="alert" className="error">
            {cause.message}
          </p>
        </main>
      );
    }
    notFound();
  }
  return (
    <main className="narrow">
      <h1>Set up the service</h1>
      <p className="muted">
        Create the first account and its workspace. You will be the workspace’s owner; invite others from its Members page. This link works
        once.
      </p>
      <SetupForm token={token} />
    </main>
  );
}
