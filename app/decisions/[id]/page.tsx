/**
 * One decision with everything a human needs to rule on it: the ask, its context, the exact
 * action it would allow (action-panel.tsx), the agent's recommendation, what waiting costs, what it blocks, and its history. Agent-written text is
 * rendered as text (React escapes it), never as markup.
 */
import { notFound } from 'next/navigation';
import { isDefaultOptions } from '@/server/domain/decisions/options';
import { AppError } from '@/server/errors';
import { actorLabel, eventWords } from '../../_lib/event-words';
import { ago, CONTINUATION_LABELS, eventLink, SHAPE_LABELS, when } from '../../_lib/format';
import { caller, requireUser, showIn } from '../../_lib/session';
import { ActionPanel } from './action-panel';
import { ArtifactsPanel } from './artifacts-panel';
import { CancelDecision } from './cancel-decision';
import { PolicyPanel } from './policy-panel';
import { RulingForm } from './ruling-form';
import { plural } from '@/server/words';

export const dynamic = 'force-dynamic';

const OUTCOME = { approved: 'Approved', declined: 'Declined', expired: 'Expired', cancelled: 'Cancelled' } as const;

export default async function DecisionPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const user = await requireUser(`/decisions/${id}`);
  let decision;
  try {
    decision = (await (await caller()).decisions.get({ id })).decision;
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if ((cause instanceof AppError && cause.code === 'not_found') || (err as { code?: string }).code === 'BAD_REQUEST') notFound();
    throw err;
  }
  // A deep link (resolve_url) into another of the user's workspaces makes that one current.
  await showIn(user, decision.workspace_id, `/decisions/${id}`);
  const role = user.memberships.find((m) => m.workspaceId === decision.workspace_id)?.role;
  const raisedByMe = decision.created_by.type === 'human' && decision.created_by.id === user.userId;
  const turn = await (await caller()).decisions.turn({ id });
  // The policy says who rules, and at which stage (a later stage's approver may decline, not yet approve).
  const canRule = decision.status === 'pending' && (turn.you.may_approve || turn.you.may_decline);
  const recommended = decision.attention?.recommended_option_id ?? null;
  // A pending action whose task changed since it was raised: its grant could never be used
  // (consume refuses a changed target), so the approver is told before ruling, not after.
  const stale = canRule ? await staleTarget(decision.action?.target) : null;
  const options = decision.shape_context.options;
  // A call the gateway holds: what came of it once ruled on (at most one sent; refusals of its retries beside it).
  const gatewayCalls = decision.gateway
    ? (await (await caller()).toolCalls.list({ workspace_id: decision.workspace_id, decision_id: decision.id, limit: 20 })).data
    : [];

  return (
    <main>
      <p>
        <a href="/decisions">← Decisions</a>
      </p>
      <h1 className="prewrap">{decision.title}</h1>
      <p className="meta-row">
        <span className={`badge status-${decision.status}`}>{decision.status}</span>
        <span className={`badge ${decision.urgency}`}>{decision.urgency}</span>
        {decision.blocks_task && <span className="badge blocking">blocking</span>}
        {decision.require_passkey && <span className="badge">passkey to approve</span>}
        <span className="muted">
          <span title={`shape: ${decision.shape}`}>
            {/* With only the default options the question is yes or no, whatever its shape says. */}
            {isDefaultOptions(options) && (decision.shape === 'option_select' || decision.shape === 'generic')
              ? 'Approve or decline'
              : (SHAPE_LABELS[decision.shape] ?? decision.shape)}
          </span>{' '}
          · raised {ago(decision.created_at)}
          {decision.due_at ? ` · due ${when(decision.due_at)}` : ''}
        </span>
      </p>

      {decision.description && (
        <section className="panel" aria-labelledby="context-h">
          <h2 id="context-h">Context</h2>
          <p className="prewrap" data-testid="description">
            {decision.description}
          </p>
        </section>
      )}

      {decision.artifacts.length > 0 && <ArtifactsPanel artifacts={decision.artifacts} />}

      {decision.action && decision.action_digest && (
        <ActionPanel
          action={decision.action}
          digest={decision.action_digest}
          editable={decision.editable}
          approved={decision.approved_action}
          approvedDigest={decision.approved_action_digest}
          grant={decision.grant}
          gateway={
            decision.gateway && {
              server: decision.gateway.server,
              tool: decision.gateway.tool,
              status: decision.status,
              calls: gatewayCalls,
            }
          }
        />
      )}

      {options.length > 0 && !isDefaultOptions(options) && (
        <section className="panel" aria-labelledby="options-h">
          <h2 id="options-h">Options</h2>
          <ul>
            {options.map((o) => (
              <li key={o.id}>
                <strong className="prewrap">{o.label}</strong>
                {o.id === recommended && <span className="badge"> recommended</span>}
                {o.description && <span className="prewrap"> — {o.description}</span>}
              </li>
            ))}
          </ul>
        </section>
      )}

      <section className="panel" aria-labelledby="attention-h">
        <h2 id="attention-h">Attention</h2>
        {decision.attention ? (
          <dl className="facts">
            <dt>Asked</dt>
            <dd>
              {plural(decision.attention.request_count, 'time')}, first {ago(decision.attention.requested_at)}
            </dd>
            {recommended && (
              <>
                <dt>Recommendation</dt>
                <dd className="prewrap">{options.find((o) => o.id === recommended)?.label ?? recommended}</dd>
              </>
            )}
            {decision.attention.recommendation_note && (
              <>
                <dt>Why</dt>
                <dd className="prewrap">{decision.attention.recommendation_note}</dd>
              </>
            )}
            {decision.attention.impact_if_delayed && (
              <>
                <dt>If delayed</dt>
                <dd className="prewrap">{decision.attention.impact_if_delayed}</dd>
              </>
            )}
            {decision.attention.continuation && (
              <>
                <dt>After approval</dt>
                <dd title={`continuation.strategy: ${decision.attention.continuation.strategy}`}>
                  {CONTINUATION_LABELS[decision.attention.continuation.strategy] ?? decision.attention.continuation.strategy}
                </dd>
              </>
            )}
          </dl>
        ) : (
          <p className="muted">No agent has asked for attention yet.</p>
        )}
        <dl className="facts">
          {decision.run_id && (
            <>
              <dt>Blocking run</dt>
              <dd>
                <code>{decision.run_id}</code>
              </dd>
            </>
          )}
          {decision.task_id && (
            <>
              <dt>Task</dt>
              <dd>
                <code>{decision.task_id}</code>
              </dd>
            </>
          )}
          {decision.initiative_id && (
            <>
              <dt>{decision.blocks_task ? 'Blocks work in' : 'Initiative'}</dt>
              <dd>
                <a href={`/initiatives/${decision.initiative_id}`}>the initiative and its operating map</a>
              </dd>
            </>
          )}
        </dl>
      </section>

      <PolicyPanel policy={decision.policy} approvals={decision.approvals} declines={decision.declines} turn={turn} />

      <section className="panel" aria-labelledby="ruling-h">
        <h2 id="ruling-h">Ruling</h2>
        {decision.resolution ? (
          <>
            <p role="status" className={decision.resolution.outcome === 'approved' ? 'success' : undefined}>
              {OUTCOME[decision.resolution.outcome]} by{' '}
              {decision.resolution.resolved_by_type === 'system' ? 'the system' : (decision.resolution.resolved_by_name ?? 'a member')}{' '}
              {ago(decision.resolution.resolved_at)}.
            </p>
            <dl className="facts" data-testid="resolution">
              <dt>Outcome</dt>
              <dd>{decision.resolution.outcome}</dd>
              {decision.resolution.option_ids.length > 0 && !isDefaultOptions(options) && (
                <>
                  <dt>Chosen</dt>
                  <dd className="prewrap">
                    {decision.resolution.option_ids.map((oid) => options.find((o) => o.id === oid)?.label ?? oid).join(', ')}
                  </dd>
                </>
              )}
              <dt>By</dt>
              <dd>
                {decision.resolution.resolved_by_type === 'system'
                  ? 'the system (timeout)'
                  : (decision.resolution.resolved_by_name ?? decision.resolution.resolved_by)}
              </dd>
              <dt>When</dt>
              <dd>{when(decision.resolution.resolved_at)}</dd>
              {decision.resolution.note && (
                <>
                  <dt>Note</dt>
                  <dd className="prewrap">{decision.resolution.note}</dd>
                </>
              )}
            </dl>
          </>
        ) : canRule ? (
          <>
            {turn.you.acting_for && (
              <p className="notice" data-testid="acting-for">
                You rule for <strong>{turn.you.acting_for.name}</strong>, who is away and gave you their rulings; yours records it.
              </p>
            )}
            <RulingForm
              decisionId={decision.id}
              title={decision.title}
              shape={decision.shape}
              options={isDefaultOptions(options) ? [] : options}
              recommended={recommended}
              editableArguments={decision.action && decision.editable ? decision.action.arguments : null}
              requirePasskey={decision.require_passkey}
              mayApprove={turn.you.may_approve}
              stale={stale}
            />
          </>
        ) : turn.you.ruled ? (
          // Shown where the ruling form was: the page refreshed after the ruling, and this is what it did.
          <p role="status">Your ruling is recorded; the decision waits for the others its policy asks.</p>
        ) : (
          <p className="muted">
            {raisedByMe
              ? 'You raised this decision; another owner or approver must rule on it.'
              : role === 'owner' || role === 'approver'
                ? 'Its policy does not ask you to rule on this decision.'
                : 'Waiting for an owner or approver of this workspace to rule. Your role can read it only.'}
          </p>
        )}
      </section>

      {decision.status === 'pending' && role === 'owner' && <CancelDecision decisionId={decision.id} />}

      <section className="panel" aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <ol className="history">
          {decision.history.map((h) => (
            <li key={h.event_id}>
              <strong>{eventWords({ eventType: h.event_type })}</strong> by {actorLabel(h.actor_type, h.actor_name)} · {when(h.occurred_at)}
              <details>
                <summary>Ledger record</summary>
                <dl className="facts">
                  <dt>Event</dt>
                  <dd>
                    <code>{h.event_type}</code>, <a href={eventLink(h.sequence)}>number {h.sequence} in this workspace’s ledger</a>
                  </dd>
                  <dt>By</dt>
                  <dd>
                    {actorLabel(h.actor_type, h.actor_name)}, <code title="The id the ledger records">{h.actor_id}</code>
                  </dd>
                  <dt>Event hash</dt>
                  <dd>
                    <code className="break">{h.event_hash}</code>
                  </dd>
                </dl>
              </details>
            </li>
          ))}
        </ol>
      </section>
    </main>
  );
}

/** The task an action targets, when it is at another version now than the action names; else null. */
async function staleTarget(target: { id: string; version: number } | undefined) {
  if (!target) return null;
  const task = await (await caller()).tasks.get({ id: target.id }).catch(() => null);
  const now = task?.data.task.aggregateVersion;
  return now !== undefined && now !== target.version ? { raised: target.version, now } : null;
}
