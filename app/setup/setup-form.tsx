'use client';
import { signIn } from 'next-auth/react';
import type { FormEvent } from 'react';
import { Messages, NewPasswordFields } from '../_components/messages';
import { trpc } from '../_lib/trpc-client';
import { samePasswords, useAction } from '../_lib/use-action';

export function SetupForm({ token }: { token: string }) {
  const { busy, error, run } = useAction();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const field = (name: string) => String(data.get(name) ?? '');
    void run(
      async () => {
        const password = samePasswords(data);
        const done = await trpc.account.completeSetup.mutate({
          token,
          workspace_name: field('workspace'),
          display_name: field('name'),
          email: field('email'),
          password,
        });
        const signedIn = await signIn('credentials', { email: done.email, password, redirect: false });
        window.location.assign(
          !signedIn || signedIn.error
            ? '/signin?callbackUrl=%2Fdecisions'
            : `/workspaces/switch?${new URLSearchParams({ to: done.workspace_id, return: '/decisions' })}`,
        );
      },
      { keepBusy: true },
    );
  }

  return (
    <form className="stack" onSubmit={submit}>
      <label>
        Workspace name
        <input name="workspace" type="text" required maxLength={100} autoFocus />
      </label>
      <label>
        Your name
        <input name="name" type="text" required maxLength={100} autoComplete="name" />
      </label>
      <label>
        Email
        <input name="email" type="email" required maxLength={320} autoComplete="username" />
      </label>
      <NewPasswordFields />
      <Messages error={error} />
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Setting up…' : 'Create account and workspace'}
      </button>
    </form>
  );
}
