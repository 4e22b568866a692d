/**
 * A workspace's decision-policy rules (GET/PUT /decision-policy), and the policy a new
 * decision gets: its own, else the first rule that matches it, else the default. Whichever it is,
 * it is checked against the members now (the people it names must be able to rule, and its quorum
 * must be within reach) and frozen on the decision.
 */
import { eq } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import {
  decisionUrgencies,
  memberships,
  workspaces,
  type DecisionOption,
  type DecisionPolicy,
  type DecisionRule,
  type DecisionUrgency,
  type PolicySource,
} from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { approvalsInAll, canStillBeMet, DEFAULT_POLICY, RULING_ROLES, resolvePolicy, type Member, type PolicyInput } from './policy';
import { isDefaultOptions } from './options';

export interface RuleInput {
  match: { urgency?: DecisionUrgency[]; tool?: string };
  policy: PolicyInput;
}

export interface WorkspaceRules {
  rules: DecisionRule[];
  /** How many times the rules were set (0: never): the ETag of GET /decision-policy. */
  version: number;
}

/** The rules as they are now. */
export async function readRules(db: Executor, workspaceId: string): Promise<WorkspaceRules> {
  const [ws] = await db
    .select({ rules: workspaces.decisionRules, version: workspaces.decisionRulesVersion })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId));
  if (!ws) throw new AppError('not_found', 'No such workspace.');
  return { rules: ws.rules, version: ws.version };
}

/** Rules in their stored form: every policy resolved, urgencies as a list in their own order. */
export function resolveRules(input: readonly RuleInput[]): DecisionRule[] {
  return input.map(({ match, policy }) => {
    return {
      match: {
        // Each once, in the order urgencies have.
        ...(match.urgency ? { urgency: decisionUrgencies.filter((u) => match.urgency!.includes(u)) } : {}),
        ...(match.tool !== undefined ? { tool: match.tool } : {}),
      },
      policy: resolvePolicy(policy),
    };
  });
}

/**
 * Replaces the rules (a new version, and `decision_policy.updated` with the whole document). With
 * `ifMatch`, rules that have moved past that version are 412 and nothing changes.
 */
export async function putRules(tx: Tx, actor: Actor, input: readonly RuleInput[], ifMatch?: number): Promise<WorkspaceRules> {
  // The ledger first, as every write takes it: it also keeps two PUTs from reading one version.
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [ws] = await tx.select({ version: workspaces.decisionRulesVersion }).from(workspaces).where(eq(workspaces.id, actor.workspaceId));
  if (!ws) throw new AppError('not_found', 'No such workspace.');
  if (ifMatch !== undefined && ifMatch !== ws.version) {
    throw new AppError('precondition_failed', `The rules are at version ${ws.version}, not ${ifMatch}.`, { version: ws.version });
  }
  const rules = resolveRules(input);
  const members = await membersOf(tx, actor.workspaceId);
  rules.forEach((rule, i) => checkNamed(rule.policy, members, `rules.${i}.policy`));
  const version = ws.version + 1;
  await tx.update(workspaces).set({ decisionRules: rules, decisionRulesVersion: version }).where(eq(workspaces.id, actor.workspaceId));
  await appendEvents(tx, actor, [
    {
      aggregateType: 'workspace',
      aggregateId: actor.workspaceId,
      eventType: 'decision_policy.updated',
      payload: { version, rules, previous_version: ws.version },
    },
  ]);
  return { rules, version };
}

/** The index of the first rule that matches a decision of this urgency and action tool; -1 for none. */
export function matchingRule(rules: readonly DecisionRule[], decision: { urgency: DecisionUrgency; tool: string | null }): number {
  return rules.findIndex(({ match }) => {
    if (match.urgency && !match.urgency.includes(decision.urgency)) return false;
    if (match.tool === undefined) return true;
    return decision.tool !== null && globMatch(match.tool, decision.tool);
  });
}

/**
 * Whether `text` fits `glob`, where `*` is any run of characters and `?` any one, the rest as it is
 * (`payments.*`, `deploy.prod-?`). The classic two-pointer walk, backtracking only to the last `*`:
 * at most length × length steps, whatever the pattern. A regular expression made from a glob
 * (picomatch, minimatch) backtracks into every earlier `*`, and `*a*a*a*a*a*a*a*a*a*ab` took
 * picomatch 9 s on a 40-character name: a rule's glob comes from a caller, so it must not.
 */
export function globMatch(glob: string, text: string): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (g < glob.length && (glob[g] === '?' || (glob[g] !== '*' && glob[g] === text[t]))) {
      g++;
      t++;
    } else if (g < glob.length && glob[g] === '*') {
      star = g++;
      resume = t;
    } else if (star !== -1) {
      g = star + 1;
      t = ++resume;
    } else return false;
  }
  while (g < glob.length && glob[g] === '*') g++;
  return g === glob.length;
}

/** The workspace's members as policies see them. */
export async function membersOf(db: Executor, workspaceId: string): Promise<Member[]> {
  return db
    .select({ user_id: memberships.userId, role: memberships.role })
    .from(memberships)
    .where(eq(memberships.workspaceId, workspaceId));
}

export interface NewDecisionPolicy {
  policy: DecisionPolicy;
  source: PolicySource;
}

/**
 * The policy of a decision being raised: the one it brings, else the first matching rule's, else
 * the default. One that asks more than a single approval cannot be combined with an editable
 * action or options of the decision's own (each approver would approve something else).
 */
export async function policyForNewDecision(
  tx: Tx,
  actor: Actor,
  decision: { policy?: PolicyInput; urgency: DecisionUrgency; tool: string | null; editable: boolean; options: readonly DecisionOption[] },
): Promise<NewDecisionPolicy> {
  let chosen: NewDecisionPolicy;
  let path = 'policy';
  if (decision.policy) {
    chosen = { policy: resolvePolicy(decision.policy), source: { type: 'request', rule_index: null, rules_version: null } };
  } else {
    const { rules, version } = await readRules(tx, actor.workspaceId);
    const index = matchingRule(rules, decision);
    if (index === -1) return { policy: DEFAULT_POLICY, source: { type: 'default', rule_index: null, rules_version: version || null } };
    chosen = { policy: rules[index]!.policy, source: { type: 'rule', rule_index: index, rules_version: version } };
    path = `decision-policy rule ${index}`;
  }
  if (approvalsInAll(chosen.policy) > 1) {
    if (decision.editable) invalid(path, 'A decision approved by several people cannot be editable: each would approve other arguments.');
    if (decision.options.length > 0 && !isDefaultOptions(decision.options)) {
      invalid(path, 'A decision approved by several people takes the approve / decline options: each would choose another.');
    }
  }
  const members = await membersOf(tx, actor.workspaceId);
  checkNamed(chosen.policy, members, path);
  const raisedBy = actor.type === 'human' ? actor.id : null;
  if (
    !canStillBeMet(
      chosen.policy,
      [],
      members.filter((m) => m.user_id !== raisedBy),
    )
  ) {
    invalid(
      path,
      `The policy cannot be met: it asks ${approvalsInAll(chosen.policy)} approvals in all, and the workspace has not the members to give them.`,
    );
  }
  return chosen;
}

/** Everyone a policy names by id must be an owner or approver of the workspace. */
export function checkNamed(policy: DecisionPolicy, members: readonly Member[], path: string): void {
  const rulers = new Set(members.filter((m) => (RULING_ROLES as readonly string[]).includes(m.role)).map((m) => m.user_id));
  const named = [...policy.stages.map((s) => s.approvers), ...policy.escalation.map((e) => e.notify)].flatMap((set) => set.user_ids);
  const strangers = [...new Set(named.filter((id) => !rulers.has(id)))];
  if (strangers.length > 0) invalid(path, `Not an owner or approver of this workspace: ${strangers.join(', ')}.`);
}

function invalid(path: string, message: string): never {
  throw new AppError('validation_failed', message, { issues: [{ path, message }] });
}
