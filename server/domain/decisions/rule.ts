/**
 * The human ruling on a decision: approve (optionally choosing options) or decline, by a signed-in
 * owner or approver of its workspace who did not raise it; or cancel, by an owner (who may withdraw
 * a decision they raised). The shell of decide.ts: under the workspace's ledger lock it reads the
 * decision once and what the ruling needs, lets decide() rule, and writes the answer in one
 * conditional update (only out of `pending`, so of two racing rulings exactly one wins) and one
 * append with what follows (the continuation or the hold's release, the grant).
 */
import { and, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisions, users } from '@/db/schema';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { continueAfterApproval } from './continuation';
import { decide, factsNeeded, grantTargetVersion } from './decide';
import { notPending, readRuling, type RulingIntent } from './read-ruling';
import { rowChanges } from './write';
import { releaseHold } from './hold';
import { DEFAULT_POLICY } from './policy';
import { membersOf } from './workspace-policy';
import { delegatingTo } from '../workspaces/delegation';
import { findDecision, type DecisionRow } from './view';
import { taskVersion } from '../grants/action';
import { issueGrant } from '../grants/issue';
import { verifyRuling, type PasskeyAnswer } from '../passkeys/ruling';
import { relyingParty } from '../passkeys/relying-party';

export interface RulingInput {
  outcome: RulingIntent['outcome'];
  option_ids?: string[];
  note?: string;
  /** Approving an editable decision's action: the arguments as the approver changed them. */
  arguments?: Record<string, unknown>;
  /** The approver's passkey assertion over the ruling's statement (server/domain/passkeys/ruling.ts). */
  passkey?: PasskeyAnswer;
}

/**
 * Rules on the decision and returns its row as the ruling left it. `signing` signs the grant an
 * approval of a decision with an action issues (its key is made now when the workspace has none yet).
 */
export async function ruleOnDecision(
  tx: Tx,
  actor: Actor,
  decisionId: string,
  input: RulingInput,
  signing: SigningSettings,
): Promise<DecisionRow> {
  if (actor.type !== 'human') throw new AppError('human_session_required');
  // The lock order of every change to existing decisions and runs: the ledger first (an approval may go on to change a run).
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const decision = await findDecision(tx, actor.workspaceId, decisionId);
  if (!decision) throw new AppError('not_found', 'No such decision in your workspace.');
  const { outcome, note } = input;
  const reading = readRuling(decision, actor.id, { ...input, passkey: input.passkey !== undefined });
  const passkey =
    reading.statement && input.passkey
      ? await verifyRuling(tx, actor, reading.statement, input.passkey, relyingParty(signing.appUrl))
      : null;
  // Read before the approval's own changes, which may move the target on again (a resumed run, which the task follows).
  const target = reading.approved?.action.target;
  const targetVersion = target ? await taskVersion(tx, actor.workspaceId, target.id) : null;
  const [user] = await tx.select({ name: users.displayName }).from(users).where(eq(users.id, actor.id));
  const by = { user_id: actor.id, role: actor.role ?? 'viewer', name: user?.name ?? null };
  const policy = decision.policy ?? DEFAULT_POLICY;
  const now = new Date();
  const needed = factsNeeded(decision, by, outcome, policy);
  const members = needed.members ? await membersOf(tx, actor.workspaceId) : [];
  const away = needed.away ? await delegatingTo(tx, actor.workspaceId, actor.id, now) : [];
  const decided = decide(decision, { by, outcome, note, reading, passkey, away, members, targetVersion, at: now }, policy);

  const [updated] = await tx
    .update(decisions)
    .set(rowChanges(decided.changes))
    .where(and(eq(decisions.id, decisionId), eq(decisions.workspaceId, actor.workspaceId), eq(decisions.status, 'pending')))
    .returning();
  if (!updated) {
    // Another ruling (or the timeout sweep) committed first.
    throw notPending((await findDecision(tx, actor.workspaceId, decisionId))?.status);
  }
  const events: NewEvent[] = [...decided.events];
  if (decided.resolved) {
    const continued = decided.resolved === 'approved' ? await continueAfterApproval(tx, actor, updated, now) : null;
    events.push(
      ...(continued && continued.outcome.action !== 'none' ? continued.events : await releaseHold(tx, actor.workspaceId, decisionId, now)),
    );
  }
  if (decided.grant) {
    // The target as the approval left it: moved on by each of the approval's own events on it.
    const version = grantTargetVersion(decided.grant, events);
    events.push(await issueGrant(tx, actor, updated, version, signing, now, decided.grant.passkey));
  }
  await appendEvents(tx, actor, events, now);
  return updated;
}
