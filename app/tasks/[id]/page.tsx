/**
 * One task: what it is, where it sits, who holds it (and who held it until their lease lapsed), its
 * receipt, runs and decisions, and its history, each
 * entry linked to its event on /ledger. Agent-written text is rendered as text, never as markup.
 */
import { eq } from 'drizzle-orm';
import { notFound } from 'next/navigation';
import { tasks } from '@/db/schema';
import { getRuntime } from '@/server/runtime';
import { actorLabels } from '../../_lib/actors';
import { eventWords } from '../../_lib/event-words';
import { eventLink, when } from '../../_lib/format';
import { caller, requireUser, showIn } from '../../_lib/session';
import { plural } from '@/server/words';

export const dynamic = 'force-dynamic';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export default async function TaskPage({ params }: { params: Promise<{ id: string }> }) {
  const { id: raw } = await params;
  if (!UUID.test(raw)) notFound();
  const id = raw.toLowerCase();
  const user = await requireUser(`/tasks/${id}`);
  // Whose task it is decides which workspace the page is in; membership is checked by the calls below.
  const [row] = await (await getRuntime()).db.select({ workspaceId: tasks.workspaceId }).from(tasks).where(eq(tasks.id, id));
  if (!row || !user.memberships.some((m) => m.workspaceId === row.workspaceId)) notFound();
  await showIn(user, row.workspaceId, `/tasks/${id}`);
  const api = await caller();
  const [{ data }, history] = await Promise.all([
    api.tasks.get({ id }),
    api.ledger.browse({ workspace_id: row.workspaceId, aggregate_id: id, limit: 100 }),
  ]);
  const { task, placement } = data;
  const lapsed = data.runs.filter((r) => r.failure_reason === 'lease_expired');
  const by = await actorLabels(row.workspaceId, history.events);

  return (
    <main>
      <p>
        <a href={`/initiatives/${placement.initiative.id}`}>← {placement.initiative.title}</a>
      </p>
      <h1 className="prewrap">{task.title}</h1>
      <p>
        <span className="badge">{task.status}</span> <span className="badge">{task.priority}</span>{' '}
        <span className="badge">{task.type}</span>
      </p>
      {task.description && <p className="prewrap">{task.description}</p>}
      <dl className="facts">
        <dt>Where</dt>
        <dd>
          {placement.initiative.title} › {placement.workstream.name} › {placement.milestone.title}
        </dd>
        <dt>Agent</dt>
        <dd>{task.agent_id ?? '—'}</dd>
        <dt>Held by</dt>
        <dd data-testid="holder">
          {data.holder ? (
            <>
              {data.holder.agent_id ?? 'an agent'} (run <code>{data.holder.runId.slice(0, 8)}</code>, fence {data.holder.fence}), lease
              until {when(data.holder.lease_expires_at)}
            </>
          ) : (
            'nobody'
          )}
        </dd>
        <dt>Estimate</dt>
        <dd>{task.estimate_hours === null ? '—' : `${task.estimate_hours} h`}</dd>
        <dt>Receipt</dt>
        <dd>{data.receipt ? `${data.receipt.status}: ${data.receipt.summary}` : '—'}</dd>
        <dt>Updated</dt>
        <dd>{when(task.updated_at)}</dd>
      </dl>
      {data.decisions.length > 0 && (
        <section className="panel" aria-labelledby="decisions-h">
          <h2 id="decisions-h">Decisions</h2>
          <ul>
            {data.decisions.map((d) => (
              <li key={d.id}>
                <a href={`/decisions/${d.id}`}>{d.title}</a> <span className={`badge status-${d.status}`}>{d.status}</span>
              </li>
            ))}
          </ul>
        </section>
      )}
      {lapsed.length > 0 && (
        <section className="panel" aria-labelledby="lapsed-h">
          <h2 id="lapsed-h">Past holders whose lease lapsed</h2>
          <p className="muted">
            Their agents stopped heartbeating; the task was made ready again, and nothing they sent after was written.
          </p>
          <ul data-testid="lapsed-holders">
            {lapsed.map((r) => (
              <li key={r.runId}>
                {r.agent_id ?? 'an agent'} (run <code>{r.runId.slice(0, 8)}</code>, fence {r.fence}), lost it{' '}
                {r.finished_at ? when(r.finished_at) : ''}
              </li>
            ))}
          </ul>
        </section>
      )}
      {data.runs.length > 0 && (
        <section className="panel" aria-labelledby="runs-h">
          <h2 id="runs-h">Runs</h2>
          <ul>
            {data.runs.map((r) => (
              <li key={r.runId}>
                <code>{r.runId.slice(0, 8)}</code> {r.status}
                {r.failure_reason === 'lease_expired' ? ' (lease lapsed)' : ''} by {r.agent_id ?? 'an agent'}, fence {r.fence},{' '}
                {plural(r.checkpoints, 'checkpoint')}, started {when(r.created_at)}
              </li>
            ))}
          </ul>
        </section>
      )}
      <section className="panel" aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <ol className="history">
          {history.events
            .slice()
            .reverse()
            .map((e) => (
              <li key={e.id}>
                <strong>{eventWords(e)}</strong> by {by(e)} · {when(e.occurredAtCanonical)} ·{' '}
                <a href={eventLink(e.sequence)} title={e.eventType}>
                  event {e.sequence} in the ledger
                </a>
              </li>
            ))}
        </ol>
      </section>
    </main>
  );
}
