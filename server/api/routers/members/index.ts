/**
 * The people of a workspace, for the web interface (/settings/members): members and pending
 * invitations listed, invitations made and revoked, roles changed, members removed (owners only),
 * and leaving (anyone). Not published as REST: API keys act for agents, and people are managed by
 * people (scripts use npm run user:add). One file per procedure; shared.ts holds their schemas.
 */
import { router } from '../../trpc';
import { listProcedure } from './list';
import { inviteProcedure } from './invite';
import { revokeInvitationProcedure } from './revoke-invitation';
import { changeRoleProcedure } from './change-role';
import { removeProcedure } from './remove';
import { leaveProcedure } from './leave';

export const membersRouter = router({
  list: listProcedure,
  invite: inviteProcedure,
  revokeInvitation: revokeInvitationProcedure,
  changeRole: changeRoleProcedure,
  remove: removeProcedure,
  leave: leaveProcedure,
});
