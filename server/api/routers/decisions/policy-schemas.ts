/**
 * Decision policies as the API takes and shows them: on POST /decisions, in the
 * workspace's rules (GET/PUT /decision-policy), and on every decision.
 */
import { z } from 'zod';
import { decisionUrgencies } from '@/db/schema';
import { RULING_ROLES } from '@/server/domain/decisions/policy';
import { id, jsonBoolean, jsonNumber, text, timestamp } from '../../schemas';

const MAX_STAGES = 5;
const MAX_ESCALATION_STEPS = 5;
const MAX_ESCALATION_SECONDS = 30 * 86_400;

const approverSetInput = z
  .strictObject({
    roles: z.array(z.enum(RULING_ROLES)).max(2).optional().meta({ description: 'Members with any of these roles.' }),
    user_ids: z.array(id()).max(50).optional().meta({ description: 'These members (each an owner or approver of the workspace).' }),
  })
  .check((ctx) => {
    if (!ctx.value.roles?.length && !ctx.value.user_ids?.length) {
      ctx.issues.push({ code: 'custom', input: ctx.value, message: 'names nobody: give roles or user_ids' });
    }
  })
  .meta({ id: 'ApproverSetInput', description: 'Who: members with one of `roles`, and the members `user_ids` names.' });

const approvalsRequired = () => jsonNumber({ min: 1, max: 10, int: true });

const uniqueNames = (ctx: { value: { name: string }[]; issues: unknown[] }) => {
  const names = ctx.value.map((s) => s.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) ctx.issues.push({ code: 'custom', input: ctx.value, message: `stage name ${dup} is repeated` });
};

export const policyInput = z
  .strictObject({
    approvals_required: approvalsRequired()
      .optional()
      .meta({ description: 'Approvals needed (1–10, default 1); with stages, the default of each stage that names none.' }),
    approvers: approverSetInput
      .optional()
      .meta({ description: 'Who may approve (default: owners and approvers); with stages, the default of each stage that names none.' }),
    veto: jsonBoolean().optional().meta({
      description:
        'true (default): any allowed decline declines at once. false: a decline is recorded, and the decision is declined only once its quorum can no longer be met.',
    }),
    stages: z
      .array(
        z.strictObject({
          name: text(1, 100),
          approvals_required: approvalsRequired().optional(),
          approvers: approverSetInput.optional(),
        }),
      )
      .min(1)
      .max(MAX_STAGES)
      .check(uniqueNames)
      .optional()
      .meta({ description: `Up to ${MAX_STAGES} stages in order: each must reach its quorum before the next is asked.` }),
    escalation: z
      .array(
        z.strictObject({
          after_seconds: jsonNumber({ min: 1, max: MAX_ESCALATION_SECONDS, int: true }),
          notify: approverSetInput,
        }),
      )
      .max(MAX_ESCALATION_STEPS)
      .optional()
      .meta({
        description:
          'Steps by time since the decision was raised: while it is pending, the people named are told and may rule at the stage it waits at.',
      }),
  })
  .meta({
    id: 'DecisionPolicyInput',
    description:
      'Who must approve, in which stages, and who is told when nobody does. Resolved when the decision is raised and never changed ' +
      'afterwards. The members named must be owners or approvers, the quorum must be within reach of the members (less whoever ' +
      'raised it), and a policy of more than one approval cannot be combined with an editable action or options of the ' +
      'decision’s own (422 validation_failed).',
  });

const approverSet = z.object({ roles: z.array(z.enum(RULING_ROLES)), user_ids: z.array(z.uuid()) }).meta({ id: 'ApproverSet' });

export const policySchema = z
  .object({
    veto: z.boolean(),
    stages: z.array(z.object({ name: z.string(), approvals_required: z.int().min(1), approvers: approverSet })).min(1),
    escalation: z.array(z.object({ after_seconds: z.int(), notify: approverSet })),
  })
  .meta({
    id: 'DecisionPolicy',
    description: 'A policy in full: every stage with its quorum and approvers (a policy without stages has one, `approval`).',
  });

export const policySourceSchema = z
  .object({
    type: z.enum(['request', 'rule', 'default']),
    rule_index: z.int().nullable().meta({ description: 'The workspace rule that applied (type rule).' }),
    rules_version: z.int().nullable().meta({ description: 'The version of the workspace’s rules consulted, if any were set.' }),
  })
  .meta({ id: 'DecisionPolicySource' });

export const rulingSchema = z
  .object({
    approver_id: z.uuid(),
    name: z.string().nullable(),
    stage: z.string().meta({ description: 'The stage it counts towards.' }),
    at: timestamp(),
    acting_for: z.uuid().optional().meta({ description: 'The member a delegate ruled for, while they are away.' }),
  })
  .meta({ id: 'DecisionRuling' });

export const ruleInput = z.strictObject({
  match: z.strictObject({
    urgency: z.array(z.enum(decisionUrgencies)).min(1).max(4).optional().meta({ description: 'Any of these urgencies (absent: any).' }),
    tool: text(1, 200).optional().meta({
      description:
        'A glob on the decision’s `action.tool`: `*` any run of characters, `?` any one, everything else itself (`payments.*`, `deploy.prod-?`). A decision without an action matches no rule with one.',
    }),
  }),
  policy: policyInput,
});

export const ruleSchema = z
  .object({
    match: z.object({ urgency: z.array(z.enum(decisionUrgencies)).optional(), tool: z.string().optional() }),
    policy: policySchema,
  })
  .meta({ id: 'DecisionPolicyRule' });
