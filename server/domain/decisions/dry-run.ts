/**
 * POST /decision-policy/dry-run: the workspace's last decided decisions replayed under
 * proposed rules. For each, the rule that would apply and whether the rulings it recorded would
 * have met that rule's policy: the same outcome, another, or still pending. Reads only.
 */
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '@/db';
import { decisions, type DecisionRule } from '@/db/schema';
import type { DecisionRow as Row } from './view';
import { DEFAULT_POLICY, replay, type RecordedRuling, type ReplayOutcome } from './policy';
import { checkNamed, matchingRule, membersOf, resolveRules, type RuleInput } from './workspace-policy';

interface DryRunEntry {
  decision_id: string;
  title: string;
  status: 'approved' | 'declined';
  /** The proposed rule that would apply; null: none matches, the default policy would. */
  rule_index: number | null;
  would_be: ReplayOutcome;
  would_change: boolean;
}

export interface DryRun {
  data: DryRunEntry[];
  totals: { decisions: number; would_change: number; would_be: Record<ReplayOutcome, number> };
}

export async function dryRun(db: Executor, workspaceId: string, input: readonly RuleInput[], limit: number): Promise<DryRun> {
  const rules: DecisionRule[] = resolveRules(input);
  const [rows, members] = await Promise.all([
    db
      // What a replay reads, not the whole rows (an action's arguments may take 64 KiB each).
      .select({
        id: decisions.id,
        title: decisions.title,
        status: decisions.status,
        urgency: decisions.urgency,
        tool: sql<string | null>`${decisions.action}->>'tool'`,
        createdByType: decisions.createdByType,
        createdById: decisions.createdById,
        resolution: decisions.resolution,
        approvals: decisions.approvals,
        declines: decisions.declines,
      })
      .from(decisions)
      .where(
        and(
          eq(decisions.workspaceId, workspaceId),
          inArray(decisions.status, ['approved', 'declined']),
          // A timeout that declined it was no one's ruling: no policy would have changed it.
          sql`${decisions.resolution}->>'resolved_by_type' = 'human'`,
        ),
      )
      .orderBy(desc(decisions.createdAt), desc(decisions.id))
      .limit(limit),
    membersOf(db, workspaceId),
  ]);
  rules.forEach((rule, i) => checkNamed(rule.policy, members, `rules.${i}.policy`));
  const totals = { decisions: 0, would_change: 0, would_be: { approved: 0, declined: 0, pending: 0 } };
  const data: DryRunEntry[] = [];
  for (const row of rows) {
    const index = matchingRule(rules, { urgency: row.urgency, tool: row.tool });
    const policy = index === -1 ? DEFAULT_POLICY : rules[index]!.policy;
    const raisedBy = row.createdByType === 'human' ? row.createdById : null;
    const wouldBe = replay(policy, recordedRulings(row), members, raisedBy);
    const status = row.status as 'approved' | 'declined';
    data.push({
      decision_id: row.id,
      title: row.title,
      status,
      rule_index: index === -1 ? null : index,
      would_be: wouldBe,
      would_change: wouldBe !== status,
    });
    totals.decisions += 1;
    totals.would_be[wouldBe] += 1;
    if (wouldBe !== status) totals.would_change += 1;
  }
  return { data, totals };
}

/**
 * The rulings a decided decision recorded, in the order given: its approvals and declines, and
 * the ruling that resolved it when it is not among them (a veto decline; an approval from before
 * policies, which recorded none).
 */
function recordedRulings(row: Pick<Row, 'approvals' | 'declines' | 'resolution'>): RecordedRuling[] {
  const timed = [
    ...row.approvals.map((a) => ({ user_id: a.acting_for ?? a.approver_id, outcome: 'approved' as const, at: a.at })),
    ...row.declines.map((d) => ({ user_id: d.acting_for ?? d.approver_id, outcome: 'declined' as const, at: d.at })),
  ];
  const resolution = row.resolution!;
  const outcome = resolution.outcome as 'approved' | 'declined';
  const counted = (outcome === 'approved' ? row.approvals : row.declines).some((r) => r.approver_id === resolution.resolved_by);
  // A delegate's ruling is the ruling of the member they acted for.
  if (!counted) timed.push({ user_id: resolution.acting_for ?? resolution.resolved_by, outcome, at: resolution.resolved_at });
  return timed.sort((a, b) => a.at.localeCompare(b.at)).map(({ user_id, outcome: o }) => ({ user_id, outcome: o }));
}
