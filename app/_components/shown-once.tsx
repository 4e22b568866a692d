'use client';
/**
 * A secret shown once (an API key, a webhook signing secret, an invitation link): what it is, the
 * value, a copy button and a way to dismiss it. Copying it, or dismissing it, closes it; a browser
 * that refuses to copy leaves it open, with a sentence saying to copy it by hand.
 */
import type { ReactNode } from 'react';
import { copyText } from '../_lib/use-action';

export function ShownOnce({
  label,
  children,
  value,
  noun,
  testId,
  copyLabel,
  dismissLabel = 'I have saved it',
  onClose,
  onError,
}: {
  /** The region's accessible name. */
  label: string;
  /** What to do with it, in words. */
  children: ReactNode;
  value: string;
  /** What it is, in the sentence a failed copy shows ("the key"). */
  noun: string;
  testId: string;
  copyLabel: string;
  dismissLabel?: string;
  /** Closes it; `copied` says whether it was copied (the caller says so) or dismissed. */
  onClose: (copied: boolean) => void;
  onError: (message: string) => void;
}) {
  async function copy() {
    if (await copyText(value)) onClose(true);
    else onError(`Copying failed: select ${noun} and copy it by hand.`);
  }
  return (
    <div className="panel shown-once" role="region" aria-label={label}>
      <p>{children}</p>
      <p className="secret" data-testid={testId}>
        {value}
      </p>
      <div className="actions">
        <button type="button" className="primary" onClick={() => void copy()}>
          {copyLabel}
        </button>
        <button type="button" onClick={() => onClose(false)}>
          {dismissLabel}
        </button>
      </div>
    </div>
  );
}
