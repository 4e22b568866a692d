/**
 * Invites `email` with `role` (owners). The link is in this response only (and in the email, when
 * SMTP is set up); `email` says whether it was sent.
 */
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import { workspaces } from '@/db/schema';
import { createInvitation } from '@/server/domain/workspaces/invitations';
import { sendMail } from '@/server/mail';
import { humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';
import { email, invitationSchema, role } from './shared';

const mailOutcome = z.union([
  z.object({ sent: z.literal(true) }),
  z.object({ sent: z.literal(false), reason: z.enum(['not_configured', 'failed']) }),
]);

export const inviteProcedure = humanOwnerProcedure
  .input(z.strictObject({ workspace_id: id(), email, role }))
  .output(z.object({ invitation: invitationSchema, link: z.url(), email: mailOutcome }))
  .mutation(async ({ ctx, input, actor, write }) => {
    const { runtime } = ctx;
    let workspaceName = '';
    // Whether the email went out is known once the invitation has committed: it is left out of the
    // check before COMMIT, and the whole answer is checked on its way out.
    const made = await write(
      async (tx) => {
        const created = await createInvitation(tx, actor, { email: input.email, role: input.role });
        const [ws] = await tx.select({ name: workspaces.name }).from(workspaces).where(eq(workspaces.id, actor.workspaceId));
        workspaceName = ws?.name ?? '';
        return { invitation: created.invitation, link: new URL(`/invite/${created.token}`, runtime.env.APP_URL).toString() };
      },
      { later: { email: true } },
    );
    const sent = await sendMail(runtime.env, {
      to: made.invitation.email,
      subject: `You are invited to ${workspaceName} on Accountable Work Service`,
      text: [
        `${ctx.principal.displayName} invites you to the workspace "${workspaceName}" as ${made.invitation.role}.`,
        '',
        `Accept within 7 days: ${made.link}`,
        '',
        'The link works once. If you did not expect it, ignore this email.',
      ].join('\n'),
    });
    return { ...made, email: sent };
  });
