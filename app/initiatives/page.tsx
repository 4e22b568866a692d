/** The operating map of a workspace: every initiative as a process, newest first. */
import { ProcessMap } from '../_components/process-map';
import { redirect } from 'next/navigation';
import { NoWorkspace } from '../_components/no-workspace';
import { caller, currentWorkspace, requireUser, switchTo } from '../_lib/session';

export const dynamic = 'force-dynamic';

export default async function InitiativesPage({ searchParams }: { searchParams: Promise<{ workspace?: string }> }) {
  const params = await searchParams;
  const user = await requireUser('/initiatives');
  const { current: workspace } = await currentWorkspace(user);
  if (params.workspace && params.workspace !== workspace?.id) redirect(switchTo(params.workspace, '/initiatives'));
  if (!workspace) return <NoWorkspace />;
  const map = await (await caller()).initiatives.operatingMap({ workspace_id: workspace.id, limit: 200 });
  return (
    <main>
      <h1>Initiatives</h1>
      <p className="muted">
        The operating map of <strong>{workspace.name}</strong>, rebuilt from {map.meta.replayedEvents} ledger events (head #
        {map.meta.ledgerHead.sequence}).
      </p>
      {map.data.processes.map((p) => (
        <section key={p.initiative_id} className="panel" aria-labelledby={`p-${p.initiative_id}`}>
          <h2 id={`p-${p.initiative_id}`}>
            <a href={`/initiatives/${p.initiative_id}`}>{p.title}</a> <span className={`badge`}>{p.status}</span>
          </h2>
          <ProcessMap process={p} titleId={`map-${p.initiative_id}`} />
        </section>
      ))}
    </main>
  );
}
