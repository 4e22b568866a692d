'use client';
/**
 * Confirming on the page, never with the browser's confirm(): a modal dialog of the browser
 * cannot be styled, hides what is being confirmed, and on a phone reads as an error. The question
 * shows where the button was; its own button takes the focus (Enter confirms) and "Go back" gives
 * the focus back to the button that asked.
 */
import { useEffect, useRef, useState, type ReactNode } from 'react';

/** What every confirmation shows: the question, the confirming button and "Go back". */
export function ConfirmPrompt(props: {
  /** The group's accessible name, e.g. "Confirm ruling". */
  label: string;
  question: ReactNode;
  confirmLabel: string;
  /** The confirming button's look: `approve`, `decline` (also any destructive step) or `primary`. */
  tone: 'approve' | 'decline' | 'primary';
  busy: boolean;
  onConfirm: () => void;
  onBack: () => void;
}) {
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => confirmRef.current?.focus(), []);
  return (
    <div className="confirm" role="group" aria-label={props.label}>
      <p>{props.question}</p>
      <div className="actions">
        <button ref={confirmRef} type="button" className={props.tone} disabled={props.busy} onClick={props.onConfirm}>
          {props.busy ? 'Saving…' : props.confirmLabel}
        </button>
        {/* "Go back", not "Cancel": cancelling is what an owner does to a decision itself. */}
        <button type="button" disabled={props.busy} onClick={props.onBack}>
          Go back
        </button>
      </div>
    </div>
  );
}

/**
 * A button whose action runs only once confirmed on the page. `onConfirm` does the work (usually
 * through useAction's `run`, which shows its outcome); the question closes when it settles.
 */
export function ConfirmButton(props: {
  children: ReactNode;
  /** What the button does, in full (its accessible name): "Revoke research agent" beside a row's "Revoke". */
  name: string;
  className?: string;
  disabled?: boolean;
  question: ReactNode;
  confirmLabel: string;
  tone?: 'approve' | 'decline' | 'primary';
  busy: boolean;
  onConfirm: () => Promise<unknown>;
}) {
  const [asking, setAsking] = useState(false);
  const [returnFocus, setReturnFocus] = useState(false);
  const askRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!asking && returnFocus) {
      askRef.current?.focus();
      setReturnFocus(false);
    }
  }, [asking, returnFocus]);

  if (asking) {
    return (
      <ConfirmPrompt
        label={`Confirm: ${props.name}`}
        question={props.question}
        confirmLabel={props.confirmLabel}
        tone={props.tone ?? 'decline'}
        busy={props.busy}
        onConfirm={() => void props.onConfirm().finally(() => setAsking(false))}
        onBack={() => {
          setAsking(false);
          setReturnFocus(true);
        }}
      />
    );
  }
  return (
    <button
      ref={askRef}
      type="button"
      className={props.className}
      disabled={props.disabled || props.busy}
      aria-label={props.name}
      onClick={() => setAsking(true)}
    >
      {props.children}
    </button>
  );
}
