'use client';
/** Approve, decline or choose options, with an optional note and a confirmation step. */
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { messageOf, trpc } from '../../_lib/trpc-client';

interface Option {
  id: string;
  label: string;
  description?: string;
}

export function RulingForm(props: { decisionId: string; title: string; shape: string; options: Option[]; recommended: string | null }) {
  const router = useRouter();
  const single = props.shape === 'option_select';
  const [chosen, setChosen] = useState<string[]>(
    props.recommended && props.options.some((o) => o.id === props.recommended) ? [props.recommended] : [],
  );
  const [note, setNote] = useState('');
  const [pending, setPending] = useState<'approve' | 'decline' | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (pending) confirmRef.current?.focus();
  }, [pending]);

  const toggle = (id: string, on: boolean) =>
    setChosen((prev) => (single ? [id] : on ? [...new Set([...prev, id])] : prev.filter((x) => x !== id)));
  const labels = chosen.map((id) => props.options.find((o) => o.id === id)?.label ?? id).join(', ');

  async function confirm() {
    if (!pending) return;
    setBusy(true);
    setError(null);
    try {
      const text = note.trim() ? note : undefined;
      if (pending === 'approve') {
        await trpc.decisions.approve.mutate({
          id: props.decisionId,
          note: text,
          option_ids: props.options.length > 0 ? chosen : undefined,
        });
        setDone('Approved. The agent sees the ruling on its next poll.');
      } else {
        await trpc.decisions.decline.mutate({ id: props.decisionId, note: text });
        setDone('Declined. The agent sees the ruling on its next poll.');
      }
      setPending(null);
      router.refresh();
    } catch (err) {
      setError(messageOf(err));
      setPending(null);
    } finally {
      setBusy(false);
    }
  }

  if (done) {
    return (
      <p role="status" className="success">
        {done}
      </p>
    );
  }

  const needsChoice = props.options.length > 0 && chosen.length === 0 && (single || props.shape === 'option_multiselect');
  return (
    <div className="stack">
      {props.options.length > 0 && (
        <fieldset>
          <legend>{single ? 'Choose one option' : 'Choose options'}</legend>
          {props.options.map((o) => (
            <label key={o.id}>
              <input
                type={single ? 'radio' : 'checkbox'}
                name="option"
                value={o.id}
                checked={chosen.includes(o.id)}
                onChange={(e) => toggle(o.id, e.target.checked)}
              />
              <span className="prewrap">
                {o.label}
                {o.id === props.recommended ? ' (recommended)' : ''}
              </span>
            </label>
          ))}
        </fieldset>
      )}
      <label>
        Note (optional)
        <textarea name="note" value={note} maxLength={2000} onChange={(e) => setNote(e.target.value)} />
      </label>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {pending ? (
        <div className="confirm" role="group" aria-label="Confirm ruling">
          <p>
            {pending === 'approve' ? `Approve “${props.title}”${labels ? ` with ${labels}` : ''}?` : `Decline “${props.title}”?`} This is
            recorded in the ledger and cannot be undone.
          </p>
          <div className="actions">
            <button ref={confirmRef} type="button" className={pending} disabled={busy} onClick={() => void confirm()}>
              {busy ? 'Saving…' : pending === 'approve' ? 'Confirm approve' : 'Confirm decline'}
            </button>
            {/* "Go back", not "Cancel": cancelling is what an owner does to the decision itself. */}
            <button type="button" disabled={busy} onClick={() => setPending(null)}>
              Go back
            </button>
          </div>
        </div>
      ) : (
        <div className="actions">
          <button type="button" className="approve" disabled={needsChoice} onClick={() => setPending('approve')}>
            {props.options.length > 0 ? 'Approve selection' : 'Approve'}
          </button>
          <button type="button" className="decline" onClick={() => setPending('decline')}>
            Decline
          </button>
        </div>
      )}
      {needsChoice && <p className="muted">Choose {single ? 'an option' : 'at least one option'} to approve.</p>}
    </div>
  );
}
