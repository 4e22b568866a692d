/** A form's outcome: an error as an alert, a notice as a status (both read out by screen readers). */
export function Messages({ error, notice, id }: { error?: string | null; notice?: string | null; id?: string }) {
  return (
    <>
      {error && (
        <p role="alert" className="error" id={id}>
          {error}
        </p>
      )}
      {notice && (
        <p role="status" className="success">
          {notice}
        </p>
      )}
    </>
  );
}

/** A new password and its confirmation (app/_lib/use-action.ts `samePasswords` checks they agree). */
export function NewPasswordFields({ name = 'password', label = 'Password' }: { name?: string; label?: string }) {
  return (
    <>
      <label>
        {label} (at least 12 characters)
        <input name={name} type="password" required minLength={12} maxLength={1024} autoComplete="new-password" />
      </label>
      <label>
        {label} again
        <input name="confirm" type="password" required minLength={12} maxLength={1024} autoComplete="new-password" />
      </label>
    </>
  );
}
