'use client';
/** Owners may withdraw a pending decision; asks for confirmation first. */
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { messageOf, trpc } from '../../_lib/trpc-client';

export function CancelDecision({ decisionId }: { decisionId: string }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function cancel() {
    if (!window.confirm('Cancel this decision? It will no longer wait for a ruling, and the agent will see it cancelled.')) return;
    setBusy(true);
    setError(null);
    try {
      await trpc.decisions.cancel.mutate({ id: decisionId });
      router.refresh();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel" aria-labelledby="cancel-h">
      <h2 id="cancel-h">No longer needed?</h2>
      <p className="muted">
        As an owner you can cancel this decision: it stops waiting for a ruling, and the agent sees it cancelled (a run paused for it is
        cancelled too).
      </p>
      <button type="button" className="link-button" disabled={busy} onClick={() => void cancel()}>
        Cancel this decision…
      </button>
      {error && (
        <span role="alert" className="error">
          {' '}
          {error}
        </span>
      )}
    </section>
  );
}
