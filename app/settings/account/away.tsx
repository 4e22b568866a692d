'use client';
/**
 * Away, and whose the member's rulings are meanwhile: "away until <time>, my rulings go
 * to <member>" in the current workspace. While it holds, the delegate may rule wherever this member
 * may, and their rulings say for whom; setting and ending it are in the ledger.
 */
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { Messages } from '../../_components/messages';
import { when } from '../../_lib/format';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';

interface Props {
  workspace: { id: string; name: string };
  away: { until: string; delegate: { user_id: string; name: string } } | null;
  candidates: { user_id: string; name: string }[];
}

export function Away({ workspace, away, candidates }: Props) {
  const router = useRouter();
  const [until, setUntil] = useState('');
  const [delegate, setDelegate] = useState(candidates[0]?.user_id ?? '');
  const { busy, error, notice, run } = useAction();

  function save(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void run(async () => {
      // datetime-local is the browser's local time: Date reads it as such.
      const set = await trpc.account.setAway.mutate({
        workspace_id: workspace.id,
        until: new Date(until).toISOString(),
        delegate_id: delegate,
      });
      router.refresh();
      return `Saved: until ${when(set.until)}, your rulings go to ${set.delegate.name}.`;
    });
  }

  function end() {
    void run(async () => {
      await trpc.account.endAway.mutate({ workspace_id: workspace.id });
      router.refresh();
      return 'You are back: your rulings are yours again.';
    });
  }

  return (
    <section className="panel narrow" aria-labelledby="away-h">
      <h2 id="away-h">Away from {workspace.name}</h2>
      {away ? (
        <div className="stack">
          <p data-testid="away">
            Away until {when(away.until)}: your rulings go to <strong>{away.delegate.name}</strong>, who may rule wherever you may.
          </p>
          <Messages error={error} notice={notice} />
          <button type="button" onClick={end} disabled={busy}>
            I am back
          </button>
        </div>
      ) : candidates.length === 0 ? (
        <p className="muted">Nobody else in this workspace can rule, so nobody can take your rulings.</p>
      ) : (
        <form className="stack" onSubmit={save}>
          <label>
            Away until
            <input type="datetime-local" name="until" required value={until} onChange={(e) => setUntil(e.target.value)} />
          </label>
          <label>
            My rulings go to
            <select name="delegate" value={delegate} onChange={(e) => setDelegate(e.target.value)}>
              {candidates.map((c) => (
                <option key={c.user_id} value={c.user_id}>
                  {c.name}
                </option>
              ))}
            </select>
          </label>
          <p className="muted">
            They may rule wherever you may; each of their rulings records that it was for you. They cannot pass it on.
          </p>
          <Messages error={error} notice={notice} />
          <button type="submit" className="primary" disabled={busy}>
            Save
          </button>
        </form>
      )}
    </section>
  );
}
