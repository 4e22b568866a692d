/**
 * The decision's policy on its page: what it asks, in words; the approvals (and the
 * declines without veto) so far; and, while it is pending, the stage it waits at and who may still
 * approve there.
 */
import type { DecisionPolicy, DecisionRuling } from '@/db/schema';
import type { Turn } from '@/server/domain/decisions/turn';
import { ago } from '../../_lib/format';
import { policyWords } from '../../_lib/policy-words';

export function PolicyPanel(props: { policy: DecisionPolicy; approvals: DecisionRuling[]; declines: DecisionRuling[]; turn: Turn }) {
  const { policy, approvals, declines, turn } = props;
  const several = policy.stages.length > 1;
  const who = (r: DecisionRuling) => r.name ?? turn.names[r.approver_id] ?? 'a member';
  return (
    <section className="panel" aria-labelledby="policy-h">
      <h2 id="policy-h">Who approves</h2>
      <p data-testid="policy-words">{policyWords(policy, turn.names)}.</p>
      {(approvals.length > 0 || declines.length > 0) && (
        <ul aria-label="Rulings so far" data-testid="approvals">
          {approvals.map((a) => (
            <li key={`a-${a.approver_id}`}>
              Approved by <strong>{who(a)}</strong>
              {several ? ` for ${a.stage}` : ''}
              {a.acting_for ? `, for ${turn.names[a.acting_for] ?? 'a member away'}` : ''} · {ago(a.at)}
            </li>
          ))}
          {declines.map((d) => (
            <li key={`d-${d.approver_id}`}>
              Declined by <strong>{who(d)}</strong> · {ago(d.at)}
            </li>
          ))}
        </ul>
      )}
      {turn.stage && (
        <p data-testid="turn">
          Waiting for {several ? `${turn.stage.name}: ` : ''}
          {turn.stage.approvals} of {turn.stage.required} {turn.stage.required === 1 ? 'approval' : 'approvals'}
          {turn.you.may_approve
            ? ' — including yours.'
            : turn.waiting_on.length > 0
              ? ` from ${turn.waiting_on.map((p) => p.name).join(', ')}.`
              : '; no member can give them now.'}
        </p>
      )}
    </section>
  );
}
