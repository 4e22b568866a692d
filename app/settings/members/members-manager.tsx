'use client';
/**
 * Members and invitations of a workspace, for its owners. A new invitation's link is shown once
 * (only its hash is kept), with a copy button, until it is copied or dismissed.
 */
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { Messages } from '../../_components/messages';
import { trpc } from '../../_lib/trpc-client';
import { copyText, useAction } from '../../_lib/use-action';
import { plural } from '@/server/words';

type Role = 'owner' | 'approver' | 'viewer';
const ROLES: Role[] = ['owner', 'approver', 'viewer'];

interface Member {
  user_id: string;
  email: string;
  display_name: string;
  role: Role;
  joined_at: string;
  last_sign_in_at: string | null;
}

interface Invitation {
  id: string;
  email: string;
  role: Role;
  invited_by: string | null;
  expires_at: string;
}

const day = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : 'never');

export function MembersManager(props: { workspaceId: string; me: string; members: Member[]; invitations: Invitation[] }) {
  const { workspaceId, me, members, invitations } = props;
  const router = useRouter();
  const { busy, error, notice, run, setError, setNotice } = useAction();
  // A new invitation's link, shown once: until it is copied or dismissed.
  const [link, setLink] = useState<{ email: string; url: string; emailed: boolean } | null>(null);

  /** Runs a change, then shows the page as it now is. */
  const act = (work: () => Promise<string | void>) =>
    void run(async () => {
      const said = await work();
      router.refresh();
      return said;
    });

  function invite(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const email = String(data.get('email') ?? '');
    const role = String(data.get('role') ?? 'viewer') as Role;
    act(async () => {
      const made = await trpc.members.invite.mutate({ workspace_id: workspaceId, email, role });
      setLink({ email: made.invitation.email, url: made.link, emailed: made.email.sent });
      form.reset();
      return made.email.sent ? `Invitation emailed to ${made.invitation.email}.` : undefined;
    });
  }

  async function copy() {
    if (!link) return;
    if (!(await copyText(link.url))) {
      setError('Copying failed: select the link and copy it by hand.');
      return;
    }
    setLink(null);
    setNotice(`Copied the invitation link for ${link.email}. It is not shown again.`);
  }

  return (
    <>
      <Messages error={error} notice={notice} />

      <section className="panel" aria-labelledby="invite-h">
        <h2 id="invite-h">Invite someone</h2>
        <form className="inline-form" onSubmit={invite}>
          <label>
            Email
            <input name="email" type="email" required maxLength={320} />
          </label>
          <label>
            Role
            {/* Named on its own: a wrapping label would also read out the chosen option. */}
            <select name="role" defaultValue="approver" aria-label="Role">
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="primary" disabled={busy}>
            Invite
          </button>
        </form>
        {link && (
          <div className="secret" role="region" aria-label="Invitation link">
            <p>
              {link.emailed ? 'Also emailed. ' : ''}Send this link to <strong>{link.email}</strong>. It works once, for 7 days, and is shown
              only now:
            </p>
            <code data-testid="invitation-link">{link.url}</code>
            <p className="actions">
              <button type="button" className="primary" onClick={() => void copy()}>
                Copy link
              </button>
              <button type="button" onClick={() => setLink(null)}>
                I have sent it
              </button>
            </p>
          </div>
        )}
      </section>

      {invitations.length > 0 && (
        <section className="panel" aria-labelledby="pending-h">
          <h2 id="pending-h">Pending invitations</h2>
          <table className="members">
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th>Invited by</th>
                <th>Expires</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {invitations.map((i) => (
                <tr key={i.id}>
                  <td>{i.email}</td>
                  <td>{i.role}</td>
                  <td>{i.invited_by ?? '—'}</td>
                  <td>{day(i.expires_at)}</td>
                  <td>
                    <button
                      type="button"
                      disabled={busy}
                      onClick={() =>
                        act(async () => {
                          await trpc.members.revokeInvitation.mutate({ workspace_id: workspaceId, invitation_id: i.id });
                          return `Revoked the invitation for ${i.email}: its link no longer works.`;
                        })
                      }
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}

      <section className="panel" aria-labelledby="members-h">
        <h2 id="members-h">Members</h2>
        <table className="members">
          <thead>
            <tr>
              <th>Name</th>
              <th>Email</th>
              <th>Role</th>
              <th>Last sign-in</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.map((m) => (
              <tr key={m.user_id} data-testid={`member-${m.email}`}>
                <td>
                  {m.display_name}
                  {m.user_id === me ? ' (you)' : ''}
                </td>
                <td>{m.email}</td>
                <td>
                  <label>
                    <span className="visually-hidden">Role of {m.email}</span>
                    <select
                      value={m.role}
                      disabled={busy}
                      onChange={(e) => {
                        const role = e.currentTarget.value as Role;
                        act(async () => {
                          await trpc.members.changeRole.mutate({ workspace_id: workspaceId, user_id: m.user_id, role });
                          return `${m.email} is now ${role}.`;
                        });
                      }}
                    >
                      {ROLES.map((r) => (
                        <option key={r} value={r}>
                          {r}
                        </option>
                      ))}
                    </select>
                  </label>
                </td>
                <td>{day(m.last_sign_in_at)}</td>
                <td>
                  {m.user_id === me ? (
                    <a href="/settings/account">Leave…</a>
                  ) : (
                    <button
                      type="button"
                      disabled={busy}
                      onClick={() => {
                        if (!window.confirm(`Remove ${m.email}? They lose access at once, and API keys they own here are revoked.`)) return;
                        act(async () => {
                          const done = await trpc.members.remove.mutate({ workspace_id: workspaceId, user_id: m.user_id });
                          return `Removed ${m.email}${done.revokedKeys ? ` and revoked ${plural(done.revokedKeys, 'API key')} they owned` : ''}.`;
                        });
                      }}
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </>
  );
}
