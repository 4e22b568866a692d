/** What the decision-policy procedures share: the rules document as the API shows it. */
import { z } from 'zod';
import type { WorkspaceRules } from '@/server/domain/decisions/workspace-policy';
import { ruleInput, ruleSchema } from '../decisions/policy-schemas';

const MAX_RULES = 50;

export const rulesInput = z
  .array(ruleInput)
  .max(MAX_RULES)
  .meta({ description: `Up to ${MAX_RULES} rules in order: a decision raised without a policy gets the first that matches it.` });

export const rulesBody = z
  .object({
    rules: z.array(ruleSchema),
    version: z.int().min(0).meta({ description: 'How many times the rules were set (0: never); the ETag.' }),
  })
  .meta({ id: 'DecisionPolicyRules' });

export const common = { tags: ['decision-policy'] };

export const answered = (rules: WorkspaceRules): z.infer<typeof rulesBody> => ({ rules: rules.rules, version: rules.version });
