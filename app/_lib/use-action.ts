'use client';
/**
 * What every form of the interface does around a call: one at a time (`busy`), the error of the
 * last one in words a person can act on, and a notice of what it did.
 */
import { useState } from 'react';
import { messageOf } from './trpc-client';

/** A problem found in the form before anything was sent; its message is shown as it is. */
class FormProblem extends Error {}

/** The new password typed twice, or a FormProblem saying they differ. */
export function samePasswords(form: FormData, name = 'password'): string {
  const password = String(form.get(name) ?? '');
  if (password !== String(form.get('confirm') ?? '')) throw new FormProblem('The password and its confirmation differ.');
  return password;
}

export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  /** Runs `work`; what it returns (a sentence) becomes the notice. False when it threw. */
  async function run(work: () => Promise<string | void>, opts: { keepBusy?: boolean } = {}): Promise<boolean> {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const said = await work();
      if (said) setNotice(said);
      if (!opts.keepBusy) setBusy(false);
      return true;
    } catch (err) {
      setError(err instanceof FormProblem ? err.message : messageOf(err));
      setBusy(false);
      return false;
    }
  }

  return { busy, error, notice, run, setError, setNotice };
}

/** Copies `text`; false (and nothing copied) when the browser refuses. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}
