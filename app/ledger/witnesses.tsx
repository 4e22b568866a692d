/**
 * "Signed checkpoints and witnesses" on /ledger: the newest checkpoint the log signed, and which
 * witnesses vouched for which tree size, and when (their cosignatures, POST /ledger/cosignatures).
 */
import { DataTable } from '../_components/data-table';
import { when } from '../_lib/format';
import { plural } from '@/server/words';
import type { witnessSummary } from '@/server/ledger/witnesses';

type Summary = Awaited<ReturnType<typeof witnessSummary>>;

export function Witnesses({ summary }: { summary: Summary }) {
  const { checkpoint, witnesses } = summary;
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
          No witness has vouched for a checkpoint yet. Anyone with an API key can run one:{' '}
          <code>npm run ledger:witness -- --url &lt;api&gt; --key &lt;key&gt; --state &lt;file&gt;</code>.
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
    </section>
  );
}
