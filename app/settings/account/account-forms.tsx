'use client';
/**
 * Changing one's password (every other session ends: the service moves the account's session
 * epoch, and this page signs in again with the new password) and leaving a workspace.
 */
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import type { FormEvent } from 'react';
import { ConfirmButton } from '../../_components/confirm';
import { DataTable } from '../../_components/data-table';
import { Field } from '../../_components/field';
import { Messages, NewPasswordFields } from '../../_components/messages';
import type { WorkspaceChoice } from '../../_lib/session';
import { trpc } from '../../_lib/trpc-client';
import { samePasswords, useAction } from '../../_lib/use-action';

/** A workspace of the user's, and whether they are its only owner (who cannot leave it). */
type Membership = WorkspaceChoice & { onlyOwner: boolean };

export function AccountForms({ email, workspaces }: { email: string; workspaces: Membership[] }) {
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

  const leave = (w: WorkspaceChoice) =>
    run(async () => {
      await trpc.members.leave.mutate({ workspace_id: w.id });
      router.refresh();
      return `You left ${w.name}.`;
    });

  return (
    <>
      <Messages error={error} notice={notice} />
      <section className="panel narrow" aria-labelledby="password-h">
        <h2 id="password-h">Change password</h2>
        <form className="stack" onSubmit={change}>
          <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
          <Field label="Current password">
            <input name="current" type="password" autoComplete="current-password" required />
          </Field>
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
          <DataTable
            caption="Your workspaces"
            captionHidden
            columns={[{ label: 'Workspace', lead: true }, { label: 'Your role' }, { label: 'Actions', hidden: true }]}
            rows={workspaces.map((w) => ({
              key: w.id,
              cells: [
                w.name,
                w.role,
                w.onlyOwner ? (
                  <span className="muted">Its only owner: make another member an owner before you leave.</span>
                ) : (
                  <ConfirmButton
                    name={`Leave ${w.name}`}
                    busy={busy}
                    question={
                      <>
                        Leave <strong>{w.name}</strong>? You lose access at once; an owner can invite you again.
                      </>
                    }
                    confirmLabel="Confirm leave"
                    onConfirm={() => leave(w)}
                  >
                    Leave
                  </ConfirmButton>
                ),
              ],
            }))}
          />
        )}
      </section>
    </>
  );
}
