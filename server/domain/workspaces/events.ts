/**
 * The workspace's slice of the event registry: the workspace itself, its ledger keys, its
 * settings and decision rules, its members and invitations. Nothing reads these payloads back:
 * tenancy is not a projection of the ledger, so each type has its payload's type and no rule.
 */
import type { DecisionRule, MembershipRole } from '@/db/schema';
import { writeOnly } from '@/server/ledger/event-types';
import { unprojected, type RulesOf } from '../projection';

export const workspaceEvents = {
  'workspace.created': writeOnly<{ name: string }>()('workspace'),
  /**
   * A checkpoint signing key for the workspace's ledger (server/ledger/checkpoints.ts): its first,
   * or one that replaces `replaces` (which is retired then). The public half only.
   */
  'ledger.key_added': writeOnly<{
    key_id: string;
    name: string;
    algorithm: 'ed25519';
    public_key: string;
    vkey: string;
    replaces: string | null;
  }>()('workspace'),

  /** The decisions of these urgencies need the approver's passkey (a workspace setting, owners). */
  'workspace.settings_changed': writeOnly<{
    passkey_urgencies: string[];
    previous_passkey_urgencies: string[];
    /** How long stored artifact bytes are kept, in days (null: for ever); absent from events written before artifacts existed. */
    artifact_content_days?: number | null;
    previous_artifact_content_days?: number | null;
  }>()('workspace'),
  /** PUT /decision-policy: the workspace's rules, whole, as of their new version. */
  'decision_policy.updated': writeOnly<{ version: number; rules: DecisionRule[]; previous_version: number }>()('workspace'),

  'membership.created': writeOnly<{ user_id: string; email: string; display_name: string; role: MembershipRole; user_created: boolean }>()(
    'membership',
  ),
  /** A member away until `until`, their rulings going to `delegate_id` (delegation.ts). */
  'membership.delegation_set': writeOnly<{ user_id: string; delegate_id: string; until: string }>()('membership'),
  'membership.delegation_ended': writeOnly<{ user_id: string; delegate_id: string; until: string }>()('membership'),
  'membership.role_changed': writeOnly<{ user_id: string; email: string; from: MembershipRole; to: MembershipRole }>()('membership'),
  'membership.removed': writeOnly<{ user_id: string; email: string; role: MembershipRole; left: boolean }>()('membership'),

  'invitation.created': writeOnly<{ id: string; email: string; role: MembershipRole; expires_at: string }>()('invitation'),
  'invitation.accepted': writeOnly<{ id: string; email: string; role: MembershipRole; user_id: string }>()('invitation'),
  'invitation.revoked': writeOnly<{ id: string; email: string; reason: string }>()('invitation'),
};

export const workspaceRules: RulesOf<typeof workspaceEvents> = {
  'workspace.created': unprojected,
  'ledger.key_added': unprojected,
  'workspace.settings_changed': unprojected,
  'decision_policy.updated': unprojected,
  'membership.created': unprojected,
  'membership.role_changed': unprojected,
  'membership.delegation_set': unprojected,
  'membership.delegation_ended': unprojected,
  'membership.removed': unprojected,
  'invitation.created': unprojected,
  'invitation.accepted': unprojected,
  'invitation.revoked': unprojected,
};
