/**
 * Decisions: those waiting for a ruling first (most urgent, longest waiting), then the rest, in the
 * current workspace; or, for a person in several workspaces, what waits in all of them (?view=all),
 * each marked with its workspace, so a decision waiting in one is not hidden while another is current.
 */
import type { ReactNode } from 'react';
import { decisionStatuses, decisionUrgencies } from '@/db/schema';
import { plural } from '@/server/words';
import { NoWorkspace } from '../_components/no-workspace';
import { ago } from '../_lib/format';
import { redirect } from 'next/navigation';
import { caller, currentWorkspace, requireUser, switchTo, type WorkspaceChoice } from '../_lib/session';
import { waitingWords, type WorkspaceWaiting } from '../_lib/waiting';

export const dynamic = 'force-dynamic';

type Search = { workspace?: string; status?: string; urgency?: string; view?: string };

function pick<T extends string>(value: string | undefined, allowed: readonly T[]): T | undefined {
  return allowed.find((a) => a === value);
}

export default async function DecisionsPage({ searchParams }: { searchParams: Promise<Search> }) {
  const params = await searchParams;
  const user = await requireUser('/decisions');
  const { workspaces, current: workspace } = await currentWorkspace(user);
  // Links from before workspaces were switched in the header (?workspace=) still land right.
  if (params.workspace && params.workspace !== workspace?.id) {
    const rest = new URLSearchParams(Object.entries(params).filter(([k, v]) => k !== 'workspace' && v) as [string, string][]);
    redirect(switchTo(params.workspace, `/decisions${rest.size ? `?${rest}` : ''}`));
  }
  if (!workspace) return <NoWorkspace />;
  const api = await caller();
  const everywhere = params.view === 'all' && workspaces.length > 1;
  const across = workspaces.length > 1 ? await api.decisions.acrossWorkspaces({ decisions: everywhere }) : null;
  if (everywhere && across) return <AllWorkspaces workspaces={workspaces} current={workspace} across={across} />;
  const elsewhere = (across?.workspaces ?? []).filter((w) => w.workspace_id !== workspace.id && w.pending > 0);
  const status = pick(params.status, decisionStatuses);
  const urgency = pick(params.urgency, decisionUrgencies);
  const inbox = await api.decisions.inbox({
    workspace_id: workspace.id,
    status: status ? [status] : undefined,
    urgency: urgency ? [urgency] : undefined,
  });
  const { byStatus, pendingByUrgency } = inbox.counts;

  return (
    <main>
      <h1>Decisions</h1>
      {across && <Views current={workspace} across={across.workspaces} everywhere={false} />}
      {elsewhere.length > 0 && (
        <p className="notice" role="note">
          Also waiting in your other workspaces:{' '}
          {elsewhere.map((w, i) => (
            <span key={w.workspace_id}>
              {i > 0 && '; '}
              <strong>{workspaces.find((c) => c.id === w.workspace_id)?.name}</strong>
              {waitingWords(w)}
            </span>
          ))}
          . <a href="/decisions?view=all">See all workspaces</a>
        </p>
      )}
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
        <Grouped decisions={inbox.decisions} needsYou={new Set(inbox.needsYou)} />
      )}
    </main>
  );
}

type InboxDecision = Awaited<ReturnType<Awaited<ReturnType<typeof caller>>['decisions']['inbox']>>['decisions'][number];

/**
 * Pending decisions split by whose turn it is under their policy: those that wait on you
 * now, then those that wait on someone else (a later stage, other approvers, or one you ruled on
 * already), then the decided ones.
 */
function Grouped({ decisions, needsYou }: { decisions: InboxDecision[]; needsYou: Set<string> }) {
  const groups: [string, InboxDecision[]][] = [
    ['Needs you', decisions.filter((d) => needsYou.has(d.id))],
    ['Waiting on others', decisions.filter((d) => d.status === 'pending' && !needsYou.has(d.id))],
    ['Decided', decisions.filter((d) => d.status !== 'pending')],
  ];
  return (
    <>
      {groups.map(([label, list]) =>
        list.length === 0 ? null : (
          <section key={label} aria-label={label}>
            <h2>
              {label} ({list.length})
            </h2>
            <ul className="decision-list" aria-label={label}>
              {list.map((d) => (
                <li key={d.id}>
                  <a href={`/decisions/${d.id}`}>
                    <span className="title">{d.title}</span>
                    <span className="meta-row">
                      <span className={`badge status-${d.status}`}>{d.status}</span>
                      <span className={`badge ${d.urgency}`}>{d.urgency}</span>
                      {d.blocks_task && <span className="badge blocking">blocking</span>}
                      {d.attention && <span className="badge">asked {d.attention.request_count}×</span>}
                      {d.status === 'pending' && d.approvals.length > 0 && (
                        <span className="badge">
                          {d.approvals.length} of {d.policy.stages.reduce((n, st) => n + st.approvals_required, 0)} approvals
                        </span>
                      )}
                      <span className="muted">raised {ago(d.created_at)}</span>
                    </span>
                  </a>
                </li>
              ))}
            </ul>
          </section>
        ),
      )}
    </>
  );
}

type Across = Awaited<ReturnType<Awaited<ReturnType<typeof caller>>['decisions']['acrossWorkspaces']>>;

/** This workspace, or all of them: two links, the one on screen marked. */
function Views({ current, across, everywhere }: { current: WorkspaceChoice; across: WorkspaceWaiting[]; everywhere: boolean }) {
  const total = across.reduce((n, w) => n + w.pending, 0);
  return (
    <nav className="toolbar views" aria-label="Which workspaces">
      <a href="/decisions" aria-current={everywhere ? undefined : 'page'}>
        {current.name}
      </a>
      <a href="/decisions?view=all" aria-current={everywhere ? 'page' : undefined}>
        All workspaces ({total} pending)
      </a>
    </nav>
  );
}

/** Every decision waiting in any of the person's workspaces, each marked with its workspace. */
function AllWorkspaces({ workspaces, current, across }: { workspaces: WorkspaceChoice[]; current: WorkspaceChoice; across: Across }) {
  const byId = new Map(across.workspaces.map((w) => [w.workspace_id, w]));
  return (
    <main>
      <h1>Decisions</h1>
      <Views current={current} across={across.workspaces} everywhere />
      <p className="muted">
        Waiting for a ruling in all your workspaces: {plural(across.decisions.length, 'decision')}. Opening one in another workspace makes
        that workspace current.
      </p>
      <ul className="counts" aria-label="Pending by workspace">
        {workspaces.map((w) => (
          <li key={w.id} className="badge">
            {w.name} ({w.role}){waitingWords(byId.get(w.id)) || ' · none pending'}
          </li>
        ))}
      </ul>
      {across.decisions.length === 0 ? (
        <p>Nothing waits for a ruling in any of your workspaces.</p>
      ) : (
        <ul className="decision-list" aria-label="Decisions in all workspaces">
          {across.decisions.map((d) => {
            const body: ReactNode = (
              <>
                <span className="title">{d.title}</span>
                <span className="meta-row">
                  <span className="badge workspace">{d.workspace_name}</span>
                  <span className={`badge ${d.urgency}`}>{d.urgency}</span>
                  {d.blocks_task && <span className="badge blocking">blocking</span>}
                  {d.request_count > 0 && <span className="badge">asked {d.request_count}×</span>}
                  <span className="muted">raised {ago(d.created_at)}</span>
                </span>
              </>
            );
            return (
              <li key={d.id}>
                {d.workspace_id === current.id ? (
                  <a href={`/decisions/${d.id}`}>{body}</a>
                ) : (
                  // Another workspace: one click makes it current and opens the decision (a POST; see /workspaces/switch).
                  <form method="post" action="/workspaces/switch">
                    <input type="hidden" name="workspace" value={d.workspace_id} />
                    <input type="hidden" name="return" value={`/decisions/${d.id}`} />
                    <button type="submit" className="decision-link">
                      {body}
                    </button>
                  </form>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </main>
  );
}
