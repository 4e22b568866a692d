/**
 * Asking a human to look at a pending decision. One attention record per decision: the first call
 * creates it; each repeat keeps attention_id and requested_at, advances request_count, and replaces
 * the recommendation fields it sends (fields it leaves out keep their value).
 */
import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisionAttention, decisions, type DecisionUrgency } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { attentionView, type AttentionView, type DecisionRow } from './view';

export interface AttentionInput {
  recommended_option_id?: string;
  recommendation_note?: string;
  impact_if_delayed?: string;
  continuation?: { strategy: 'resume_session' | 'restart_task' | 'manual' };
}

export interface AttentionResult {
  decision: DecisionRow;
  attention: AttentionView;
  /** True when the record already existed (this call refreshed it). */
  repeated: boolean;
}

/** How long an agent should wait before polling, by urgency (docs/contract.md §4.3). */
export const POLL_AFTER_MS: Record<DecisionUrgency, number> = {
  critical: 5_000,
  urgent: 15_000,
  standard: 60_000,
  deferred: 300_000,
};

export async function requestAttention(tx: Tx, actor: Actor, decisionId: string, input: AttentionInput): Promise<AttentionResult> {
  // The ledger lock first (the lock order of every change to existing decisions and runs), then
  // the decision: this orders the call against a ruling racing it: after a ruling commits,
  // attention is refused; before, the ruling sees the attention.
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [decision] = await tx
    .select()
    .from(decisions)
    .where(and(eq(decisions.id, decisionId), eq(decisions.workspaceId, actor.workspaceId)))
    .for('update');
  if (!decision) throw new AppError('not_found', 'No such decision in your workspace.');
  if (decision.status !== 'pending') {
    throw new AppError('decision_not_pending', `The decision is ${decision.status}; poll it for the resolution.`, {
      status: decision.status,
    });
  }
  if (input.recommended_option_id !== undefined && !decision.options.some((o) => o.id === input.recommended_option_id)) {
    throw new AppError('validation_failed', 'recommended_option_id is not one of the decision’s options.', {
      issues: [
        { path: 'recommended_option_id', message: `must be one of: ${decision.options.map((o) => o.id).join(', ') || '(no options)'}` },
      ],
    });
  }

  const now = new Date();
  const set = {
    recommendedOptionId: input.recommended_option_id,
    recommendationNote: input.recommendation_note,
    impactIfDelayed: input.impact_if_delayed,
    continuationStrategy: input.continuation?.strategy,
  };
  const [row] = await tx
    .insert(decisionAttention)
    .values({
      decisionId,
      workspaceId: actor.workspaceId,
      attentionId: randomUUID(),
      requestedAt: now,
      lastRequestedAt: now,
      requestCount: 1,
      ...set,
    })
    .onConflictDoUpdate({
      target: decisionAttention.decisionId,
      set: {
        requestCount: sql`${decisionAttention.requestCount} + 1`,
        lastRequestedAt: now,
        // Only what this call sends replaces what is there.
        ...Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined)),
      },
    })
    .returning();
  const attention = attentionView(row)!;
  // The attention record is part of the decision: it is a change of the decision aggregate.
  await tx
    .update(decisions)
    .set({ updatedAt: now, version: sql`${decisions.version} + 1` })
    .where(eq(decisions.id, decisionId));
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'decision',
        aggregateId: decisionId,
        eventType: 'decision.attention_requested',
        payload: { decision_id: decisionId, ...attention },
      },
    ],
    now,
  );
  return { decision, attention, repeated: attention.request_count > 1 };
}
