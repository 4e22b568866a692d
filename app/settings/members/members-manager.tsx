'use client';
/**
 * Members and invitations of a workspace, for its owners. A new invitation's link is shown once
 * (only its hash is kept), with a copy button, until it is copied or dismissed.
 */
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import type { MembershipRole } from '@/db/schema';
import { ConfirmButton } from '../../_components/confirm';
import { DataTable } from '../../_components/data-table';
import { Field } from '../../_components/field';
import { Messages } from '../../_components/messages';
import { ShownOnce } from '../../_components/shown-once';
import { minute } from '../../_lib/format';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';
import { plural } from '@/server/words';

const ROLES: MembershipRole[] = ['owner', 'approver', 'viewer'];

interface Member {
  user_id: string;
  email: string;
  display_name: string;
  role: MembershipRole;
  joined_at: string;
  last_sign_in_at: string | null;
}

interface Invitation {
  id: string;
  email: string;
  role: MembershipRole;
  invited_by: string | null;
  expires_at: string;
}

export function MembersManager(props: { workspaceId: string; me: string; members: Member[]; invitations: Invitation[] }) {
  const { workspaceId, me, members, invitations } = props;
  const router = useRouter();
  const { busy, error, notice, run, setError, setNotice } = useAction();
  // A new invitation's link, shown once: until it is copied or dismissed.
  const [link, setLink] = useState<{ email: string; url: string; emailed: boolean } | null>(null);

  /** Runs a change, then shows the page as it now is. */
  const act = (work: () => Promise<string | void>) =>
    run(async () => {
      const said = await work();
      router.refresh();
      return said;
    });

  function invite(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const email = String(data.get('email') ?? '');
    const role = String(data.get('role') ?? 'viewer') as MembershipRole;
    void act(async () => {
      const made = await trpc.members.invite.mutate({ workspace_id: workspaceId, email, role });
      setLink({ email: made.invitation.email, url: made.link, emailed: made.email.sent });
      form.reset();
      return made.email.sent ? `Invitation emailed to ${made.invitation.email}.` : undefined;
    });
  }

  return (
    <>
      <Messages error={error} notice={notice} />

      <section className="panel" aria-labelledby="invite-h">
        <h2 id="invite-h">Invite someone</h2>
        <form className="toolbar" onSubmit={invite}>
          <Field label="Email" className="grow">
            <input name="email" type="email" required maxLength={320} />
          </Field>
          <Field label="Role" className="fit">
            <select name="role" defaultValue="approver">
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </Field>
          <button type="submit" className="primary" disabled={busy}>
            Invite
          </button>
        </form>
        {link && (
          <ShownOnce
            label="Invitation link"
            value={link.url}
            noun="the link"
            testId="invitation-link"
            copyLabel="Copy link"
            dismissLabel="I have sent it"
            onClose={(copied) => {
              setLink(null);
              if (copied) setNotice(`Copied the invitation link for ${link.email}. It is not shown again.`);
            }}
            onError={setError}
          >
            {link.emailed ? 'Also emailed. ' : ''}Send this link to <strong>{link.email}</strong>. It works once, for 7 days, and is shown
            only now:
          </ShownOnce>
        )}
      </section>

      {invitations.length > 0 && (
        <section className="panel" aria-labelledby="pending-h">
          <h2 id="pending-h">Pending invitations</h2>
          <DataTable
            caption="Pending invitations"
            captionHidden
            columns={[
              { label: 'Email', lead: true },
              { label: 'Role' },
              { label: 'Invited by' },
              { label: 'Expires' },
              { label: 'Actions', hidden: true },
            ]}
            rows={invitations.map((i) => ({
              key: i.id,
              cells: [
                i.email,
                i.role,
                i.invited_by ?? '—',
                minute(i.expires_at),
                <ConfirmButton
                  name={`Revoke the invitation for ${i.email}`}
                  busy={busy}
                  question={
                    <>
                      Revoke the invitation for <strong>{i.email}</strong>? Its link stops working at once.
                    </>
                  }
                  confirmLabel="Confirm revoke"
                  onConfirm={() =>
                    act(async () => {
                      await trpc.members.revokeInvitation.mutate({ workspace_id: workspaceId, invitation_id: i.id });
                      return `Revoked the invitation for ${i.email}: its link no longer works.`;
                    })
                  }
                >
                  Revoke
                </ConfirmButton>,
              ],
            }))}
          />
        </section>
      )}

      <section className="panel" aria-labelledby="members-h">
        <h2 id="members-h">Members</h2>
        <DataTable
          caption="Members"
          captionHidden
          columns={[
            { label: 'Name', lead: true },
            { label: 'Email' },
            { label: 'Role' },
            { label: 'Last sign-in' },
            { label: 'Actions', hidden: true },
          ]}
          rows={members.map((m) => ({
            key: m.user_id,
            testId: `member-${m.email}`,
            cells: [
              `${m.display_name}${m.user_id === me ? ' (you)' : ''}`,
              m.email,
              <label>
                <span className="visually-hidden">Role of {m.email}</span>
                <select
                  value={m.role}
                  disabled={busy}
                  onChange={(e) => {
                    const role = e.currentTarget.value as MembershipRole;
                    void act(async () => {
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
              </label>,
              m.last_sign_in_at ? minute(m.last_sign_in_at) : 'never',
              m.user_id === me ? (
                <a href="/settings/account">Leave…</a>
              ) : (
                <ConfirmButton
                  name={`Remove ${m.email}`}
                  busy={busy}
                  question={
                    <>
                      Remove <strong>{m.email}</strong>? They lose access at once, and the API keys they own here are revoked.
                    </>
                  }
                  confirmLabel="Confirm remove"
                  onConfirm={() =>
                    act(async () => {
                      const done = await trpc.members.remove.mutate({ workspace_id: workspaceId, user_id: m.user_id });
                      return `Removed ${m.email}${done.revokedKeys ? ` and revoked ${plural(done.revokedKeys, 'API key')} they owned` : ''}.`;
                    })
                  }
                >
                  Remove
                </ConfirmButton>
              ),
            ],
          }))}
        />
      </section>
    </>
  );
}
