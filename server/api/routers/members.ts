/**
 * The people of a workspace, for the web interface (/settings/members): members and pending
 * invitations listed, invitations made and revoked, roles changed, members removed (owners only),
 * and leaving (anyone). Not published as REST: API keys act for agents, and people are managed by
 * people (scripts use npm run user:add).
 */
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import { membershipRoles, workspaces } from '@/db/schema';
import { createInvitation, listPendingInvitations, revokeInvitation } from '@/server/domain/workspaces/invitations';
import { changeRole, listMembers, removeMember } from '@/server/domain/workspaces/members';
import { sendMail, type MailOutcome } from '@/server/mail';
import { runMutation } from '../mutation';
import { actorIn, humanProcedure, router } from '../trpc';
import { id } from '../schemas';

const OWNERS = ['owner'] as const;
const role = z.enum(membershipRoles);
const email = z.email().max(320);

export const membersRouter = router({
  list: humanProcedure.input(z.strictObject({ workspace_id: id() })).query(async ({ ctx, input }) => {
    actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    const { db } = ctx.runtime;
    return db.transaction(async (tx) => ({
      members: await listMembers(tx, input.workspace_id),
      invitations: await listPendingInvitations(tx, input.workspace_id),
    }));
  }),

  /**
   * Invites `email` with `role`. The link is in this response only (and in the email, when SMTP is
   * set up); `email` says whether it was sent.
   */
  invite: humanProcedure.input(z.strictObject({ workspace_id: id(), email, role })).mutation(async ({ ctx, input }) => {
    const actor = actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    const { runtime } = ctx;
    const created = await runMutation(ctx, actor, { status: 200, output: z.any() }, async (tx) => {
      const made = await createInvitation(tx, actor, { email: input.email, role: input.role });
      const [ws] = await tx.select({ name: workspaces.name }).from(workspaces).where(eq(workspaces.id, actor.workspaceId));
      return { ...made, workspaceName: ws?.name ?? '' };
    });
    const link = new URL(`/invite/${created.token}`, runtime.env.APP_URL).toString();
    const email: MailOutcome = await sendMail(runtime.env, {
      to: created.invitation.email,
      subject: `You are invited to ${created.workspaceName} on Accountable Work Service`,
      text: [
        `${ctx.principal.displayName} invites you to the workspace "${created.workspaceName}" as ${created.invitation.role}.`,
        '',
        `Accept within 7 days: ${link}`,
        '',
        'The link works once. If you did not expect it, ignore this email.',
      ].join('\n'),
    });
    return { invitation: created.invitation, link, email };
  }),

  revokeInvitation: humanProcedure.input(z.strictObject({ workspace_id: id(), invitation_id: id() })).mutation(({ ctx, input }) => {
    const actor = actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    return runMutation(ctx, actor, { status: 200, output: z.any() }, (tx) =>
      revokeInvitation(tx, actor, { invitationId: input.invitation_id }),
    );
  }),

  changeRole: humanProcedure.input(z.strictObject({ workspace_id: id(), user_id: id(), role })).mutation(({ ctx, input }) => {
    const actor = actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    return runMutation(ctx, actor, { status: 200, output: z.any() }, (tx) =>
      changeRole(tx, actor, { userId: input.user_id, role: input.role }),
    );
  }),

  remove: humanProcedure.input(z.strictObject({ workspace_id: id(), user_id: id() })).mutation(({ ctx, input }) => {
    const actor = actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    return runMutation(ctx, actor, { status: 200, output: z.any() }, (tx) => removeMember(tx, actor, { userId: input.user_id }));
  }),

  /** The signed-in user leaves the workspace (not its last owner). */
  leave: humanProcedure.input(z.strictObject({ workspace_id: id() })).mutation(({ ctx, input }) => {
    const actor = actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden' });
    return runMutation(ctx, actor, { status: 200, output: z.any() }, (tx) => removeMember(tx, actor, { userId: actor.id }));
  }),
});
