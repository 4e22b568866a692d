/**
 * A person's own account and the links that bring people in, for the web interface: changing
 * one's password, one's passkeys, one's delegation while away, opening and accepting an invitation, and the one-time setup of an empty
 * installation. One file per procedure; shared.ts holds their fields and how a link is spent.
 */
import { router } from '../../trpc';
import { changePasswordProcedure } from './change-password';
import { invitationProcedure } from './invitation';
import { acceptInvitationProcedure } from './accept-invitation';
import { joinWithInvitationProcedure } from './join-with-invitation';
import { setupLinkProcedure } from './setup-link';
import { completeSetupProcedure } from './complete-setup';
import {
  addPasskeyProcedure,
  passkeyListProcedure,
  passkeyOptionsProcedure,
  passkeySignInOptionsProcedure,
  removePasskeyProcedure,
} from './passkeys';
import { awayProcedure, endAwayProcedure, setAwayProcedure } from './away';

export const accountRouter = router({
  changePassword: changePasswordProcedure,
  invitation: invitationProcedure,
  acceptInvitation: acceptInvitationProcedure,
  joinWithInvitation: joinWithInvitationProcedure,
  setupLink: setupLinkProcedure,
  completeSetup: completeSetupProcedure,
  passkeys: passkeyListProcedure,
  passkeyOptions: passkeyOptionsProcedure,
  addPasskey: addPasskeyProcedure,
  removePasskey: removePasskeyProcedure,
  passkeySignInOptions: passkeySignInOptionsProcedure,
  away: awayProcedure,
  setAway: setAwayProcedure,
  endAway: endAwayProcedure,
});
