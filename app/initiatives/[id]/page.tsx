/** One initiative: its tree with statuses, dependencies and estimates, and its process on the operating map. */
import { notFound } from 'next/navigation';
import { AppError } from '@/server/errors';
import { DataTable } from '../../_components/data-table';
import { ProcessMap } from '../../_components/process-map';
import { caller, requireUser, showIn } from '../../_lib/session';
import { plural } from '@/server/words';

export const dynamic = 'force-dynamic';

const hours = (h: number | null) => (h === null ? '—' : `${h} h`);

export default async function InitiativePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const user = await requireUser(`/initiatives/${id}`);
  const api = await caller();
  let read;
  try {
    read = await api.initiatives.get({ initiativeId: id, include: 'tree' });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if ((cause instanceof AppError && cause.code === 'not_found') || (err as { code?: string }).code === 'BAD_REQUEST') notFound();
    throw err;
  }
  const { initiative, tree } = read.data;
  await showIn(user, initiative.workspace_id, `/initiatives/${id}`);
  const map = await api.initiatives.operatingMap({ workspace_id: initiative.workspace_id, initiative_id: initiative.id, limit: 1 });
  const process = map.data.processes[0];
  const names = new Map<string, string>();
  for (const w of tree?.workstreams ?? []) {
    names.set(w.id, w.name);
    for (const m of w.milestones) for (const t of m.tasks) names.set(t.id, t.title);
  }
  const nameOf = (ids: string[]) => ids.map((x) => names.get(x) ?? x).join(', ');

  return (
    <main>
      <p>
        <a href="/initiatives">← Initiatives</a>
      </p>
      <h1 className="prewrap">{initiative.title}</h1>
      <p className="meta-row">
        <span className="badge">{initiative.status}</span>
        <span className="muted">
          {initiative.visibility} · {initiative.model_tier} tier · {initiative.execution_policy.mode}, up to{' '}
          {plural(initiative.execution_policy.max_concurrent_agents, 'agent')} · {hours(tree?.estimate_hours ?? 0)} estimated
        </span>
      </p>
      {initiative.summary && <p className="prewrap">{initiative.summary}</p>}

      <section className="panel" aria-labelledby="map-h">
        <h2 id="map-h">Operating map</h2>
        {process ? <ProcessMap process={process} titleId="initiative-map" /> : <p className="muted">Not on the map yet.</p>}
        {process && process.evidence.length > 0 && (
          <p className="muted">Evidence: {plural(process.evidence.length, 'receipt')}, each with the hash of the event that recorded it.</p>
        )}
      </section>

      <section className="panel" aria-labelledby="tree-h">
        <h2 id="tree-h">Tree</h2>
        {(tree?.workstreams ?? []).length === 0 && <p className="muted">No workstreams yet.</p>}
        {(tree?.workstreams ?? []).map((w) => (
          <section key={w.id} className="workstream" aria-label={`Workstream ${w.name}`}>
            <h3>
              {w.name} <span className="badge">{w.status}</span>
            </h3>
            <p className="muted">
              {w.domain}
              {w.agent_id ? ` · agent ${w.agent_id}` : ''} · {hours(w.estimate_hours)}
              {w.depends_on.length > 0 ? ` · after ${nameOf(w.depends_on)}` : ''}
            </p>
            {w.milestones.map((m) => (
              <div key={m.id}>
                <h4>
                  {m.title} <span className="badge">{m.status}</span> <span className="muted">· {hours(m.estimate_hours)}</span>
                </h4>
                {m.tasks.length === 0 ? (
                  <p className="muted">No tasks.</p>
                ) : (
                  <DataTable
                    caption={`Tasks of ${m.title}`}
                    captionHidden
                    columns={[
                      { label: 'Task', lead: true },
                      { label: 'Status' },
                      { label: 'Type' },
                      { label: 'Agent' },
                      { label: 'Estimate' },
                      { label: 'After' },
                    ]}
                    rows={m.tasks.map((t) => ({
                      key: t.id,
                      cells: [
                        <a href={`/tasks/${t.id}`} className="prewrap">
                          {t.title}
                        </a>,
                        <span className="badge">{t.status}</span>,
                        t.type,
                        t.agent_id ?? '—',
                        hours(t.estimate_hours),
                        t.depends_on.length > 0 ? nameOf(t.depends_on) : '—',
                      ],
                    }))}
                  />
                )}
              </div>
            ))}
          </section>
        ))}
      </section>
    </main>
  );
}
