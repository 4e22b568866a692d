/**
 * A form field: its label above the control and, when it needs one, a hint between them that is
 * tied to the control (aria-describedby). The label stays short and on one line; the hint may hold
 * code without breaking the label apart, and is not read as part of the field's name.
 */
import { cloneElement, useId, type ReactElement, type ReactNode } from 'react';

type Control = ReactElement<{ id?: string; 'aria-describedby'?: string }>;

export function Field({ label, hint, children, className }: { label: ReactNode; hint?: ReactNode; children: Control; className?: string }) {
  const id = useId();
  return (
    <div className={className ? `field ${className}` : 'field'}>
      <label htmlFor={id}>{label}</label>
      {hint && (
        <span className="hint" id={`${id}-hint`}>
          {hint}
        </span>
      )}
      {cloneElement(children, { id, 'aria-describedby': hint ? `${id}-hint` : undefined })}
    </div>
  );
}
