/**
 * What the procedures of decisionsRouter share: the builder of those that act on one decision,
 * and the overdue timeout a decision is settled by before anyone sees or acts on it.
 */
import { decisions, type MembershipRole } from '@/db/schema';
import { expireIfDue } from '@/server/domain/decisions/timeouts';
import { loadDecisionView, type DecisionRow as Row, type DecisionView, type Viewer } from '@/server/domain/decisions/view';
import { AppError } from '@/server/errors';
import { signingOf } from '@/server/runtime';
import { withRow } from '../../locate';
import { acting } from '../../procedures';
import { authenticatedProcedure, type ApiContext } from '../../trpc';

const noSuchDecision = () => new AppError('not_found', 'No such decision in your workspace.');

/**
 * The decision the input names (`id`), with its row (`row`), read in the query that finds its
 * workspace: an API key sees its own workspace's, a human those of the workspaces they belong to;
 * anything else is 404.
 */
export const decisionRow = (roles?: readonly MembershipRole[]) => withRow(decisions, 'id', noSuchDecision, roles);

/** Acting on the decision the input names, for any caller of its workspace (with one of `roles`, for humans). */
export const decisionProcedure = (roles?: readonly MembershipRole[]) => acting(authenticatedProcedure, decisionRow(roles));

/** Applies an overdue timeout before the caller sees or acts on the decision. */
export async function settleTimeout(ctx: ApiContext, row: Row): Promise<void> {
  if (row.status === 'pending' && row.dueAt && row.dueAt.getTime() <= Date.now()) {
    await ctx.runtime.db.transaction((tx) => expireIfDue(tx, row.workspaceId, row.id));
  }
}

/** The decision as `viewer` may see it (a grant's token only to the party it is for). */
export async function viewOf(ctx: ApiContext, workspaceId: string, decisionId: string, viewer: Viewer): Promise<DecisionView> {
  const view = await loadDecisionView(ctx.runtime.db, workspaceId, decisionId, signingOf(ctx.runtime), viewer);
  if (!view) throw noSuchDecision();
  return view;
}
