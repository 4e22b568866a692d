/** Decisions: those waiting for a ruling first (most urgent, longest waiting), then the rest. */
import { decisionStatuses, decisionUrgencies } from '@/db/schema';
import { NoWorkspace } from '../_components/no-workspace';
import { ago } from '../_lib/format';
import { redirect } from 'next/navigation';
import { caller, currentWorkspace, requireUser, switchTo } from '../_lib/session';

export const dynamic = 'force-dynamic';

type Search = { workspace?: string; status?: string; urgency?: string };

function pick<T extends string>(value: string | undefined, allowed: readonly T[]): T | undefined {
  return allowed.find((a) => a === value);
}

export default async function DecisionsPage({ searchParams }: { searchParams: Promise<Search> }) {
  const params = await searchParams;
  const user = await requireUser('/decisions');
  const { current: workspace } = await currentWorkspace(user);
  // Links from before workspaces were switched in the header (?workspace=) still land right.
  if (params.workspace && params.workspace !== workspace?.id) {
    const rest = new URLSearchParams(Object.entries(params).filter(([k, v]) => k !== 'workspace' && v) as [string, string][]);
    redirect(switchTo(params.workspace, `/decisions${rest.size ? `?${rest}` : ''}`));
  }
  if (!workspace) return <NoWorkspace />;
  const status = pick(params.status, decisionStatuses);
  const urgency = pick(params.urgency, decisionUrgencies);
  const inbox = await (
    await caller()
  ).decisions.inbox({
    workspace_id: workspace.id,
    status: status ? [status] : undefined,
    urgency: urgency ? [urgency] : undefined,
  });
  const { byStatus, pendingByUrgency } = inbox.counts;

  return (
    <main>
      <h1>Decisions</h1>
      <p className="muted">
        In <strong>{workspace.name}</strong> you are {inbox.role}
        {inbox.role === 'viewer' ? ' (you can read decisions, not rule on them)' : ''}
      </p>
      <ul className="counts" aria-label="Counts">
        <li className="badge status-pending">{byStatus.pending} pending</li>
        {decisionUrgencies
          .slice()
          .reverse()
          .map((u) =>
            pendingByUrgency[u] > 0 ? (
              <li key={u} className={`badge ${u}`}>
                {pendingByUrgency[u]} {u}
              </li>
            ) : null,
          )}
        <li className="badge status-approved">{byStatus.approved} approved</li>
        <li className="badge status-declined">{byStatus.declined} declined</li>
        <li className="badge status-expired">{byStatus.expired + byStatus.cancelled} expired or cancelled</li>
      </ul>
      <form className="toolbar" method="get" aria-label="Filters">
        <label>
          Status
          <select name="status" defaultValue={status ?? ''}>
            <option value="">All</option>
            {decisionStatuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Urgency
          <select name="urgency" defaultValue={urgency ?? ''}>
            <option value="">All</option>
            {decisionUrgencies.map((u) => (
              <option key={u} value={u}>
                {u}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      {inbox.decisions.length === 0 ? (
        <p>No decisions match. New ones appear here as agents raise them.</p>
      ) : (
        <ul className="decision-list" aria-label="Decisions">
          {inbox.decisions.map((d) => (
            <li key={d.id}>
              <a href={`/decisions/${d.id}`}>
                <span className="title">{d.title}</span>
                <span className="meta-row">
                  <span className={`badge status-${d.status}`}>{d.status}</span>
                  <span className={`badge ${d.urgency}`}>{d.urgency}</span>
                  {d.blocks_task && <span className="badge blocking">blocking</span>}
                  {d.attention && <span className="badge">asked {d.attention.request_count}×</span>}
                  <span className="muted">raised {ago(d.created_at)}</span>
                </span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}
