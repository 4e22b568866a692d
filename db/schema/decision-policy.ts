/**
 * The shapes of decision policies, as decisions and workspaces store them. What they
 * mean is server/domain/decisions/policy.ts.
 */

/** Who may approve at a stage (or is told at an escalation step): members with one of the roles, and the users named. */
export interface ApproverSet {
  roles: ('owner' | 'approver')[];
  user_ids: string[];
}

/**
 * A decision's policy, resolved when it is raised and never changed afterwards: stages
 * in order, each needing its quorum from its approvers before the next; whether one decline ends
 * it; who is told, and may then rule, as time passes. server/domain/decisions/policy.ts reads it.
 */
export interface DecisionPolicy {
  veto: boolean;
  stages: { name: string; approvals_required: number; approvers: ApproverSet }[];
  escalation: { after_seconds: number; notify: ApproverSet }[];
}

/** Where a decision's policy came from: its own request, a workspace rule (which, of which version), or the default. */
export interface PolicySource {
  type: 'request' | 'rule' | 'default';
  rule_index: number | null;
  rules_version: number | null;
}

/** One member's ruling towards a decision's quorum (an approval, or a decline that did not end it). */
export interface DecisionRuling {
  approver_id: string;
  name: string | null;
  /** The stage it counts towards (by name). */
  stage: string;
  at: string;
  /** The member whose ruling a delegate gave, while they are away. */
  acting_for?: string;
}

/** A workspace rule: the policy a decision raised without one gets, when it matches (the first that does). */
export interface DecisionRule {
  match: {
    /** Any of these urgencies (absent: any). */
    urgency?: ('deferred' | 'standard' | 'urgent' | 'critical')[];
    /** A glob on action.tool (`*` any run, `?` any one character); a decision without an action matches no rule with one. */
    tool?: string;
  };
  policy: DecisionPolicy;
}
