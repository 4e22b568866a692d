/**
 * Words shared by the pages, the API's messages and the command-line tools, so that a count reads
 * the same everywhere: "1 event", "2 events", never "1 events" or "event(s)".
 */

/** `n` and its noun in the right number; `plural` for nouns that do not just add an s. */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : pluralForm}`;
}
