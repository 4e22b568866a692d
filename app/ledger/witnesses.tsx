/**
 * "Signed checkpoints and witnesses" on /ledger: the newest checkpoint the log signed, which
 * witnesses vouched for which tree size, and when (their cosignatures, POST /ledger/cosignatures),
 * and the witnesses the owners named (POST /ledger/witnesses): only theirs are kept.
 */
import { DataTable } from '../_components/data-table';
import { when } from '../_lib/format';
import { plural } from '@/server/words';
import type { WitnessView } from '@/server/domain/witnesses/witnesses';
import type { witnessSummary } from '@/server/ledger/witnesses';

type Summary = Awaited<ReturnType<typeof witnessSummary>> & { named: WitnessView[] };

export function Witnesses({ summary }: { summary: Summary }) {
  const { checkpoint, witnesses, named } = summary;
  return (
    <section className="panel" aria-labelledby="witnesses-h">
      <h2 id="witnesses-h">Signed checkpoints and witnesses</h2>
      {checkpoint ? (
        <p>
          The log signed its tree of {plural(checkpoint.treeSize, 'event')} at {when(checkpoint.signedAt)} with key{' '}
          <code>{checkpoint.keyId}</code>, root <code title={checkpoint.rootHash}>{checkpoint.rootHash.slice(0, 12)}…</code>
        </p>
      ) : (
        <p className="muted">No checkpoint signed yet: one is signed within a second or so of the first event.</p>
      )}
      {witnesses.length === 0 ? (
        <p className="muted">
          No named witness has vouched for a checkpoint yet. Anyone with an API key can run one (
          <code>AWS_API_KEY=&lt;key&gt; npm run ledger:witness -- --url &lt;api&gt; --state &lt;file&gt;</code>); an owner names it first
          with its verifier key (<code>POST /ledger/witnesses</code>).
        </p>
      ) : (
        <DataTable
          className="witnesses"
          caption="Witnesses and the largest tree each vouched for"
          columns={[{ label: 'Witness', lead: true }, { label: 'Vouched for' }, { label: 'Signed' }, { label: 'Received' }]}
          rows={witnesses.map((w) => ({
            key: `${w.witness}+${w.keyId}`,
            cells: [
              <>
                {w.witness} <code className="muted">{w.keyId}</code>
              </>,
              <>
                {plural(w.treeSize, 'event')}{' '}
                <span title={w.rootHash}>{w.current ? '(the newest checkpoint)' : '(an earlier checkpoint)'}</span>
              </>,
              when(w.signedAt),
              when(w.receivedAt),
            ],
          }))}
        />
      )}
      <NamedWitnesses named={named} />
    </section>
  );
}

/** The witnesses the owners named: only their cosignatures are kept and served. */
function NamedWitnesses({ named }: { named: WitnessView[] }) {
  if (named.length === 0) {
    return <p className="muted">No witness is named: cosignatures are refused until an owner names a witness.</p>;
  }
  return (
    <DataTable
      className="named-witnesses"
      caption="Named witnesses: only their cosignatures are kept"
      columns={[{ label: 'Witness', lead: true }, { label: 'Verifier key' }, { label: 'Named' }]}
      rows={named.map((w) => ({
        key: w.id,
        cells: [
          <>
            {w.name} <code className="muted">{w.key_id}</code>
          </>,
          <code key="vkey" className="vkey">
            {w.vkey}
          </code>,
          when(w.named_at),
        ],
      }))}
    />
  );
}
