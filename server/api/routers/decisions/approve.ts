/** POST /decisions/{id}/approve: Approve a decision (signed-in humans). */
import { z } from 'zod';
import { RULING_ROLES } from '@/server/domain/decisions/policy';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { id, text } from '../../schemas';
import { webauthnAnswer } from '../account/passkeys';
import { actionArguments, decisionBody } from './schemas';
import { rule, rulingFields, rulingProcedure } from './ruling';

export const approveProcedure = rulingProcedure(RULING_ROLES)
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions/{id}/approve',
      tags: ['decisions'],
      summary: 'Approve a decision (signed-in humans)',
      description:
        'For a signed-in owner or approver of the decision’s workspace, from the app’s own pages; an API key gets 403 ' +
        'human_session_required. option_select: choose exactly one option (the default approve / decline pair needs ' +
        'none); option_multiselect: at least one. Whoever raised a decision cannot rule on it. Approving a decision ' +
        'with an action issues its grant (`decision.grant`); an `editable` one may be approved with changed ' +
        '`arguments`, and its `approved_action` then carries them. A decision with require_passkey is approved only ' +
        'with the approver’s passkey (403 passkey_required without it).',
    },
    auth: ['Session'],
    errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending', 'already_ruled', 'passkey_required'],
  })
  .input(
    z.strictObject({
      ...rulingFields,
      option_ids: z.array(text(1, 120)).max(20).optional(),
      arguments: actionArguments()
        .optional()
        .meta({ description: 'An editable decision’s action approved with these arguments instead of those raised.' }),
      passkey: z
        .strictObject({ challenge_id: id(), response: webauthnAnswer<AuthenticationResponseJSON>() })
        .optional()
        .meta({
          description:
            'The approver’s passkey over this ruling: the challenge the page asked for it, and the WebAuthn assertion ' +
            '(@simplewebauthn/browser’s startAuthentication answer). Required when the decision has require_passkey.',
        }),
    }),
  )
  .output(decisionBody)
  .mutation(rule('approved'));
