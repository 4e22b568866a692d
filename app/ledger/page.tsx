/**
 * The ledger in the browser (every member): the current workspace's events newest first, filtered
 * by event type and aggregate, each with its sequence, its hashes and a link to what it recorded;
 * the chain verified on demand; the newest signed checkpoint and the witnesses that vouched for
 * it; and the whole ledger downloaded as a bundle anyone can check.
 */
import { redirect } from 'next/navigation';
import { DataTable } from '../_components/data-table';
import { Field } from '../_components/field';
import { NoWorkspace } from '../_components/no-workspace';
import { actorLabels } from '../_lib/actors';
import { eventWords } from '../_lib/event-words';
import { recordedAt, when } from '../_lib/format';
import { caller, currentWorkspace, requireUser, switchTo } from '../_lib/session';
import { VerifyChain } from './verify-chain';
import { Witnesses } from './witnesses';

export const dynamic = 'force-dynamic';

type Search = { workspace?: string; type?: string; aggregate?: string; at?: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EVENT_TYPE = /^[a-z][a-z0-9_.-]{0,99}$/;

const short = (hash: string) => `${hash.slice(0, 15)}…`;

export default async function LedgerPage({ searchParams }: { searchParams: Promise<Search> }) {
  const params = await searchParams;
  const user = await requireUser('/ledger');
  const { current: workspace } = await currentWorkspace(user);
  if (params.workspace && params.workspace !== workspace?.id) redirect(switchTo(params.workspace, '/ledger'));
  if (!workspace) return <NoWorkspace />;
  const type = params.type && EVENT_TYPE.test(params.type) ? params.type : undefined;
  const aggregate = params.aggregate && UUID.test(params.aggregate) ? params.aggregate.toLowerCase() : undefined;
  const at = params.at && /^[1-9]\d{0,15}$/.test(params.at) ? Number(params.at) : undefined;
  const api = await caller();
  const page = await api.ledger.browse({ workspace_id: workspace.id, event_type: type, aggregate_id: aggregate, at, limit: 50 });
  const signed = await api.ledger.witnessSummary({ workspace_id: workspace.id });
  const by = await actorLabels(workspace.id, page.events);
  const filters = new URLSearchParams(Object.entries({ type, aggregate }).filter(([, v]) => v) as [string, string][]);
  const older = page.olderAt ? `/ledger?${new URLSearchParams([...filters, ['at', String(page.olderAt)]])}` : null;

  return (
    <main>
      <h1>Ledger</h1>
      <p className="muted">
        Every accepted change in <strong>{workspace.name}</strong>, newest first. Each event names the hash of the one before it, so
        changing or removing any of them breaks the chain from there on.
      </p>
      <VerifyChain workspaceId={workspace.id} />
      <Witnesses summary={signed} />
      <section className="panel" aria-labelledby="bundle-h">
        <h2 id="bundle-h">Download a bundle</h2>
        <p className="muted">
          The whole ledger as one file, the same one <code>npm run ledger:export</code> writes. Anyone can check it with no database and no
          access to this service: <code>npm run ledger:verify -- --bundle &lt;file&gt;</code>.
        </p>
        <a className="link-button" href={`/ledger/bundle?workspace=${workspace.id}`} download>
          Download a bundle
        </a>
      </section>
      <form method="get" action="/ledger" className="toolbar" aria-label="Filter events">
        <Field label="Event type">
          <input type="text" name="type" defaultValue={type ?? ''} placeholder="decision.approved" pattern="[a-z][a-z0-9_.\-]{0,99}" />
        </Field>
        <Field label="Aggregate id" className="grow">
          <input type="text" name="aggregate" defaultValue={aggregate ?? ''} placeholder="a decision, task or key id" />
        </Field>
        <button type="submit">Filter</button>
        {(type || aggregate || at) && <a href="/ledger">Show all</a>}
      </form>
      {page.events.length === 0 ? (
        <p className="muted">No events match.</p>
      ) : (
        <DataTable
          className="ledger"
          caption="Ledger events, newest first"
          captionHidden
          columns={[
            { label: '#', lead: true },
            { label: 'Event' },
            { label: 'Recorded' },
            { label: 'By' },
            { label: 'When' },
            { label: 'Hashes' },
          ]}
          rows={page.events.map((e) => ({
            key: e.id,
            id: `event-${e.sequence}`,
            className: e.sequence === at ? 'highlight' : undefined,
            cells: [
              e.sequence,
              <>
                {eventWords(e, { subject: true })}
                <br />
                <a href={`/ledger?type=${encodeURIComponent(e.eventType)}`} title="Only events of this type" className="muted">
                  <code>{e.eventType}</code>
                </a>
              </>,
              <a href={recordedAt(e)}>
                {e.aggregateType} {e.aggregateId.slice(0, 8)}
              </a>,
              <span title={e.actorId}>{by(e)}</span>,
              when(e.occurredAtCanonical),
              <details>
                <summary>
                  <code title={e.eventHash}>{short(e.eventHash)}</code>
                </summary>
                <dl className="facts">
                  <dt>Event hash</dt>
                  <dd>
                    <code>{e.eventHash}</code>
                  </dd>
                  <dt>Previous hash</dt>
                  <dd>
                    <code>{e.previousHash}</code>
                  </dd>
                  <dt>Payload digest</dt>
                  <dd>
                    <code>{e.payloadDigest}</code>
                  </dd>
                  <dt>Event id</dt>
                  <dd>
                    <code>{e.id}</code>
                  </dd>
                </dl>
              </details>,
            ],
          }))}
        />
      )}
      {older && (
        <p>
          <a href={older}>Older events →</a>
        </p>
      )}
    </main>
  );
}
