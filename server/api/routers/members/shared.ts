/** The fields and answers the procedures of membersRouter share. */
import { z } from 'zod';
import { membershipRoles } from '@/db/schema';

export const role = z.enum(membershipRoles);
export const email = z.email().max(320);

/** An invitation as the members page shows it (server/domain/workspaces/invitations.ts, Invitation). */
export const invitationSchema = z.object({
  id: z.uuid(),
  email: z.string(),
  role,
  state: z.enum(['pending', 'accepted', 'revoked', 'expired']),
  invited_by: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});

/** What removing a member (or leaving) revoked with them: the API keys they owned there. */
export const removedOutput = z.object({ revokedKeys: z.int().min(0) });
