'use client';
/**
 * Changing one's password (every other session ends: the service moves the account's session
 * epoch, and this page signs in again with the new password) and leaving a workspace.
 */
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import type { FormEvent } from 'react';
import { Messages, NewPasswordFields } from '../../_components/messages';
import type { WorkspaceChoice } from '../../_lib/session';
import { trpc } from '../../_lib/trpc-client';
import { samePasswords, useAction } from '../../_lib/use-action';

export function AccountForms({ email, workspaces }: { email: string; workspaces: WorkspaceChoice[] }) {
  const router = useRouter();
  const { busy, error, notice, run } = useAction();

  function change(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    void run(async () => {
      const next = samePasswords(data, 'next');
      await trpc.account.changePassword.mutate({ current: String(data.get('current') ?? ''), next });
      form.reset();
      // This session ended with all the others; a fresh one with the new password keeps you here.
      const again = await signIn('credentials', { email, password: next, redirect: false });
      if (!again || again.error) {
        router.push('/signin?callbackUrl=%2Fsettings%2Faccount');
        return;
      }
      router.refresh();
      return 'Password changed. Every other session of yours has been signed out.';
    });
  }

  function leave(w: WorkspaceChoice) {
    if (!window.confirm(`Leave ${w.name}? You lose access at once; an owner can invite you again.`)) return;
    void run(async () => {
      await trpc.members.leave.mutate({ workspace_id: w.id });
      router.refresh();
      return `You left ${w.name}.`;
    });
  }

  return (
    <>
      <Messages error={error} notice={notice} />
      <section className="panel narrow" aria-labelledby="password-h">
        <h2 id="password-h">Change password</h2>
        <form className="stack" onSubmit={change}>
          <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
          <label>
            Current password
            <input name="current" type="password" autoComplete="current-password" required />
          </label>
          <NewPasswordFields name="next" label="New password" />
          <button type="submit" className="primary" disabled={busy}>
            Change password
          </button>
        </form>
      </section>
      <section className="panel" aria-labelledby="workspaces-h">
        <h2 id="workspaces-h">Your workspaces</h2>
        {workspaces.length === 0 ? (
          <p>You are in no workspace.</p>
        ) : (
          <table className="members">
            <thead>
              <tr>
                <th>Workspace</th>
                <th>Your role</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {workspaces.map((w) => (
                <tr key={w.id}>
                  <td>{w.name}</td>
                  <td>{w.role}</td>
                  <td>
                    <button type="button" disabled={busy} onClick={() => leave(w)} aria-label={`Leave ${w.name}`}>
                      Leave
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
