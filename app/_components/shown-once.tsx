/**
 * A secret shown once (an API key, a webhook signing secret): what it is, the value, a copy button
 * and a way to dismiss it. The caller decides what copying and dismissing do.
 */
import type { ReactNode } from 'react';

export function ShownOnce({
  label,
  children,
  value,
  testId,
  copyLabel,
  dismissLabel = 'I have saved it',
  onCopy,
  onDismiss,
}: {
  /** The region's accessible name. */
  label: string;
  /** What to do with it, in words. */
  children: ReactNode;
  value: string;
  testId: string;
  copyLabel: string;
  dismissLabel?: string;
  onCopy: () => void;
  onDismiss: () => void;
}) {
  return (
    <div className="panel" role="region" aria-label={label}>
      <p>{children}</p>
      <p className="secret" data-testid={testId}>
        {value}
      </p>
      <div className="actions">
        <button type="button" className="primary" onClick={onCopy}>
          {copyLabel}
        </button>
        <button type="button" onClick={onDismiss}>
          {dismissLabel}
        </button>
      </div>
    </div>
  );
}
