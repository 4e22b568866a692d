'use client';
/** Accepting an invitation: as someone new (name and password, then signed in) or as a signed-in member. */
import { signIn } from 'next-auth/react';
import type { FormEvent } from 'react';
import { Messages, NewPasswordFields } from '../../_components/messages';
import { trpc } from '../../_lib/trpc-client';
import { samePasswords, useAction } from '../../_lib/use-action';

/** Into the workspace just joined: make it current, open its decisions. */
const enter = (workspaceId: string) =>
  window.location.assign(`/workspaces/switch?${new URLSearchParams({ to: workspaceId, return: '/decisions' })}`);

export function JoinForm({ token, email, workspaceId }: { token: string; email: string; workspaceId: string }) {
  const { busy, error, run } = useAction();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    void run(
      async () => {
        const password = samePasswords(data);
        await trpc.account.joinWithInvitation.mutate({ token, display_name: String(data.get('name') ?? ''), password });
        const signedIn = await signIn('credentials', { email, password, redirect: false });
        if (!signedIn || signedIn.error) window.location.assign('/signin?callbackUrl=%2Fdecisions');
        else enter(workspaceId);
      },
      { keepBusy: true },
    );
  }

  return (
    <form className="stack" onSubmit={submit}>
      <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
      <label>
        Your name
        <input name="name" type="text" required maxLength={100} autoComplete="name" autoFocus />
      </label>
      <NewPasswordFields />
      <Messages error={error} />
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Joining…' : 'Create account and join'}
      </button>
    </form>
  );
}

export function AcceptInvitation({ token, workspaceId }: { token: string; workspaceId: string }) {
  const { busy, error, run } = useAction();
  const accept = () =>
    void run(
      async () => {
        await trpc.account.acceptInvitation.mutate({ token });
        enter(workspaceId);
      },
      { keepBusy: true },
    );
  return (
    <>
      <Messages error={error} />
      <button type="button" className="primary" disabled={busy} onClick={accept}>
        Accept and join
      </button>
    </>
  );
}
