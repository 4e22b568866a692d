'use client';
/**
 * Approve, decline or choose options, with an optional note and a confirmation on the page.
 *
 * On a narrow screen the buttons (and then the confirmation) sit in a bar fixed to the bottom of
 * the screen (globals.css, `.ruling-bar`), so a long title or context never puts the ruling
 * screens away; they stay in the document after the note, so the order of the keyboard is the
 * same on every screen.
 */
import { startAuthentication } from '@simplewebauthn/browser';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { ConfirmPrompt } from '../../_components/confirm';
import { Messages } from '../../_components/messages';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';

interface Option {
  id: string;
  label: string;
  description?: string;
}

type Ruling = 'approve' | 'decline';

export function RulingForm(props: {
  decisionId: string;
  title: string;
  shape: string;
  options: Option[];
  recommended: string | null;
  /** An editable action's arguments: the approver may change them before approving. */
  editableArguments: Record<string, unknown> | null;
  /** Approving takes the approver's passkey, over the statement of this very approval. */
  requirePasskey: boolean;
  /** The policy asks this person to approve now (a later stage's approver may only decline yet). */
  mayApprove: boolean;
  /** The action's task is at another version than it was raised for: an approval's grant could not be used. */
  stale?: { raised: number; now: number } | null;
}) {
  const router = useRouter();
  const single = props.shape === 'option_select';
  const [chosen, setChosen] = useState<string[]>(
    props.recommended && props.options.some((o) => o.id === props.recommended) ? [props.recommended] : [],
  );
  const [note, setNote] = useState('');
  const raised = props.editableArguments ? JSON.stringify(props.editableArguments, null, 2) : '';
  const [argumentsText, setArgumentsText] = useState(raised);
  const edited = readArguments(argumentsText);
  const [pending, setPending] = useState<Ruling | null>(null);
  // The button whose confirmation was backed out of gets the focus again.
  const [backTo, setBackTo] = useState<Ruling | null>(null);
  const { busy, error, notice, run } = useAction();
  const buttons = { approve: useRef<HTMLButtonElement>(null), decline: useRef<HTMLButtonElement>(null) };
  const doneRef = useRef<HTMLParagraphElement>(null);

  useEffect(() => {
    if (!pending && backTo) {
      buttons[backTo].current?.focus();
      setBackTo(null);
    }
  });
  // Ruled from the bar, the outcome is shown where the ruling panel is.
  useEffect(() => {
    if (notice) doneRef.current?.scrollIntoView({ block: 'nearest' });
  }, [notice]);

  const toggle = (id: string, on: boolean) =>
    setChosen((prev) => (single ? [id] : on ? [...new Set([...prev, id])] : prev.filter((x) => x !== id)));
  const labels = chosen.map((id) => props.options.find((o) => o.id === id)?.label ?? id).join(', ');

  const confirm = (ruling: Ruling) =>
    void run(async () => {
      const text = note.trim() ? note : undefined;
      try {
        if (ruling === 'approve') {
          const choice = {
            id: props.decisionId,
            option_ids: props.options.length > 0 ? chosen : undefined,
            // Sent only when changed: an approval of the action as raised carries its digest.
            arguments: props.editableArguments && argumentsText !== raised && edited.value ? edited.value : undefined,
          };
          // The passkey signs the statement of exactly this approval, which the server wrote.
          const passkey = props.requirePasskey ? await signWithPasskey(choice) : undefined;
          await trpc.decisions.approve.mutate({ ...choice, note: text, passkey });
        } else {
          await trpc.decisions.decline.mutate({ id: props.decisionId, note: text });
        }
      } finally {
        setPending(null);
      }
      router.refresh();
      return `${ruling === 'approve' ? 'Approved' : 'Declined'}. The agent sees the ruling on its next poll.`;
    });

  if (notice) {
    return (
      <p role="status" className="success" ref={doneRef}>
        {notice}
      </p>
    );
  }

  const needsChoice = props.options.length > 0 && chosen.length === 0 && (single || props.shape === 'option_multiselect');
  const badArguments = props.editableArguments !== null && edited.problem !== null;
  return (
    <div className="stack">
      {props.editableArguments && (
        <label>
          Arguments to approve (JSON)
          <textarea
            name="arguments"
            className="code"
            rows={Math.min(20, raised.split('\n').length + 1)}
            value={argumentsText}
            aria-invalid={badArguments}
            aria-describedby="arguments-help"
            onChange={(e) => setArgumentsText(e.target.value)}
          />
          <span id="arguments-help" className={badArguments ? 'error' : 'muted'}>
            {badArguments ? edited.problem : 'Change them to approve the action with other arguments; both versions are recorded.'}
          </span>
        </label>
      )}
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
      {props.stale && (
        <p className="notice" data-testid="stale-target">
          Approving gives a grant that cannot be used: the task is at version {props.stale.now} now, not {props.stale.raised} as when this
          was raised. Decline it as stale, and the agent can raise it again for the task as it is.
        </p>
      )}
      <label>
        Note (optional)
        <textarea name="note" value={note} maxLength={2000} onChange={(e) => setNote(e.target.value)} />
      </label>
      <div className="ruling-bar">
        <Messages error={error} />
        {pending ? (
          <ConfirmPrompt
            label="Confirm ruling"
            question={
              <>
                {pending === 'approve' && props.requirePasskey
                  ? 'Sign with your passkey and approve'
                  : pending === 'approve'
                    ? 'Approve'
                    : 'Decline'}{' '}
                <span className="quoted">“{props.title}”</span>
                {pending === 'approve' && labels ? ` with ${labels}` : ''}
                {pending === 'approve' && props.editableArguments && argumentsText !== raised
                  ? ', with the arguments as you changed them'
                  : ''}
                ? This is recorded in the ledger and cannot be undone.
              </>
            }
            confirmLabel={pending === 'approve' ? 'Confirm approve' : 'Confirm decline'}
            tone={pending}
            busy={busy}
            onConfirm={() => confirm(pending)}
            onBack={() => {
              setBackTo(pending);
              setPending(null);
            }}
          />
        ) : (
          <div className="actions">
            {props.mayApprove && (
              <button
                ref={buttons.approve}
                type="button"
                className="approve"
                disabled={needsChoice || badArguments}
                onClick={() => setPending('approve')}
              >
                {props.options.length > 0 ? 'Approve selection' : 'Approve'}
              </button>
            )}
            <button ref={buttons.decline} type="button" className="decline" onClick={() => setPending('decline')}>
              Decline
            </button>
            {props.stale && (
              <button
                type="button"
                className="decline"
                onClick={() => {
                  const stale = props.stale!;
                  if (!note.trim())
                    setNote(
                      `Stale: the task is at version ${stale.now} now, not ${stale.raised} as raised. Raise it again for the task as it is.`,
                    );
                  setPending('decline');
                }}
              >
                Decline as stale
              </button>
            )}
          </div>
        )}
        {needsChoice && !pending && <p className="muted">Choose {single ? 'an option' : 'at least one option'} to approve.</p>}
      </div>
    </div>
  );
}

type AuthenticationOptions = Parameters<typeof startAuthentication>[0]['optionsJSON'];

/** The approver's passkey over the approval `choice`: the challenge the server asks, answered by the authenticator. */
async function signWithPasskey(choice: { id: string; option_ids?: string[]; arguments?: Record<string, unknown> }) {
  const { challenge_id, options } = await trpc.decisions.passkeyChallenge.mutate(choice);
  // tRPC's inferred JSON type of the options loses their exact shape; they are what the server library made.
  const response = await startAuthentication({ optionsJSON: options as unknown as AuthenticationOptions });
  return { challenge_id, response };
}

/** The arguments as typed: a JSON object, or what is wrong with the text. */
function readArguments(text: string): { value: Record<string, unknown> | null; problem: string | null } {
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return { value: null, problem: 'The arguments must be a JSON object.' };
    return { value: value as Record<string, unknown>, problem: null };
  } catch {
    return { value: null, problem: 'This is not valid JSON.' };
  }
}
