/**
 * An invitation link. Someone new sets their name and password and is signed in; someone with an
 * account signs in as the invited address and accepts. A link that is not good (unknown, used,
 * revoked or expired) is a 404, said the same way whichever it is.
 */
import { notFound } from 'next/navigation';
import { AppError } from '@/server/errors';
import { SignOutButton } from '../../_components/sign-out-button';
import { caller, currentUser } from '../../_lib/session';
import { AcceptInvitation, JoinForm } from './invitation-forms';

export const dynamic = 'force-dynamic';

export default async function InvitationPage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  let invitation;
  try {
    invitation = await (await caller()).account.invitation({ token });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof AppError && cause.code === 'rate_limited') {
      return (
        <main className="narrow">
          <h1>Invitation</h1>
          <p role="alert" className="error">
            {cause.message}
          </p>
        </main>
      );
    }
    if ((cause instanceof AppError && cause.code === 'not_found') || (err as { code?: string }).code === 'BAD_REQUEST') notFound();
    throw err;
  }
  const user = await currentUser();
  const here = `/invite/${token}`;
  return (
    <main className="narrow">
      <h1>Join {invitation.workspace.name}</h1>
      <p>
        {invitation.invited_by ? `${invitation.invited_by} invites` : 'You are invited:'} <strong>{invitation.email}</strong> to the
        workspace <strong>{invitation.workspace.name}</strong> as <strong>{invitation.role}</strong>. The link works once, until{' '}
        {invitation.expires_at.slice(0, 10)}.
      </p>
      {user && user.email === invitation.email ? (
        <AcceptInvitation token={token} workspaceId={invitation.workspace.id} />
      ) : user ? (
        <p>
          You are signed in as {user.email}. Sign out, then open this link again and sign in as {invitation.email}. <SignOutButton />
        </p>
      ) : invitation.account_exists ? (
        <p>
          <a href={`/signin?callbackUrl=${encodeURIComponent(here)}`}>Sign in as {invitation.email}</a> to accept.
        </p>
      ) : (
        <JoinForm token={token} email={invitation.email} workspaceId={invitation.workspace.id} />
      )}
    </main>
  );
}
