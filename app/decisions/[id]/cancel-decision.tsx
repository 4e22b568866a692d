'use client';
/** Owners may withdraw a pending decision, once they confirm it on the page. */
import { useRouter } from 'next/navigation';
import { ConfirmButton } from '../../_components/confirm';
import { Messages } from '../../_components/messages';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';

export function CancelDecision({ decisionId }: { decisionId: string }) {
  const router = useRouter();
  const { busy, error, run } = useAction();

  return (
    <section className="panel" aria-labelledby="cancel-h">
      <h2 id="cancel-h">No longer needed?</h2>
      <p className="muted">
        As an owner you can cancel this decision: it stops waiting for a ruling, and the agent sees it cancelled (a run paused for it is
        cancelled too).
      </p>
      <ConfirmButton
        name="Cancel this decision…"
        className="link-button"
        busy={busy}
        question="Cancel this decision? It will no longer wait for a ruling, and the agent will see it cancelled."
        confirmLabel="Confirm cancel"
        onConfirm={() =>
          run(async () => {
            await trpc.decisions.cancel.mutate({ id: decisionId });
            router.refresh();
          })
        }
      >
        Cancel this decision…
      </ConfirmButton>
      <Messages error={error} />
    </section>
  );
}
