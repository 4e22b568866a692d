'use client';
/**
 * "Verify the chain": the server recomputes the workspace's chain in steps (ledger.verifyStep, the
 * same checks as GET /api/v1/ledger/verify and npm run ledger:verify), and the page shows how far
 * it has come, then the outcome: every event intact up to the head, or the first broken link.
 */
import { useState } from 'react';
import type { VerifyReport } from '@/server/ledger/chain';
import type { VerifyProgress } from '@/server/ledger/verify';
import { Messages } from '../_components/messages';
import { eventLink } from '../_lib/format';
import { trpc } from '../_lib/trpc-client';
import { useAction } from '../_lib/use-action';
import { plural } from '@/server/words';

const REASONS: Record<string, string> = {
  sequence_gap: 'an event is missing (the sequence skips)',
  payload_digest_mismatch: 'its payload is not the one that was hashed',
  event_hash_mismatch: 'its fields are not the ones that were hashed',
  previous_hash_mismatch: 'it does not link to the event before it',
  head_mismatch: 'the recorded head is not where the chain ends',
  checkpoint_signature_invalid: 'the newest signed checkpoint does not verify with the workspace’s key',
  checkpoint_beyond_head: 'the chain ends before the size the log signed: events were cut',
  checkpoint_root_mismatch: 'the events up to the signed size are not the ones the log signed',
};

export function VerifyChain({ workspaceId }: { workspaceId: string }) {
  const { busy, error, run } = useAction();
  const [progress, setProgress] = useState<VerifyProgress | null>(null);
  const [report, setReport] = useState<VerifyReport | null>(null);

  const verify = () =>
    run(async () => {
      setReport(null);
      setProgress(null);
      let at: VerifyProgress | undefined;
      for (;;) {
        const step = await trpc.ledger.verifyStep.query({ workspace_id: workspaceId, progress: at });
        if (step.done) {
          setReport(step.report);
          return;
        }
        at = step.progress;
        setProgress(at);
      }
    });

  const total = report?.head.sequence ?? progress?.head?.sequence ?? 0;
  const checked = report ? report.checkedEvents : (progress?.checkedEvents ?? 0);
  return (
    <section className="panel" aria-labelledby="verify-h">
      <h2 id="verify-h">Verify the chain</h2>
      <p className="muted">
        Recomputes every event’s hashes and links, from the first event to the head, as <code>npm run ledger:verify</code> does.
      </p>
      <button type="button" onClick={verify} disabled={busy}>
        {busy ? 'Verifying…' : 'Verify the chain'}
      </button>
      {(busy || report) && total > 0 && (
        <p>
          <progress value={checked} max={total} aria-label="Events verified" /> {checked} of {plural(total, 'event')} checked
        </p>
      )}
      <div role="status">
        {report?.verified && (
          <p className="success">
            The chain verifies: {report.checkedEvents === 1 ? 'its one event is' : `all ${report.checkedEvents} events are`} intact, up to
            the head at event {report.head.sequence} (<code title={report.head.hash}>{report.head.hash.slice(0, 19)}…</code>).{' '}
            {report.checkpoint
              ? `They match the checkpoint the log signed at ${plural(report.checkpoint.treeSize, 'event')} (key ${report.checkpoint.keyId}).`
              : 'No checkpoint has been signed yet.'}
          </p>
        )}
        {report && !report.verified && report.firstBreak && (
          <p className="error">
            The chain breaks at event {report.firstBreak.sequence}: {REASONS[report.firstBreak.reason] ?? report.firstBreak.reason} (
            {report.firstBreak.reason}). Expected <code>{report.firstBreak.expected}</code>, found <code>{report.firstBreak.actual}</code>.{' '}
            {plural(report.checkedEvents, 'event')} before it {report.checkedEvents === 1 ? 'is' : 'are'} intact.{' '}
            <a href={eventLink(report.firstBreak.sequence)}>See the event</a>
          </p>
        )}
      </div>
      <Messages error={error} />
    </section>
  );
}
