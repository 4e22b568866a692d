/**
 * A bundle verifier written from the README's "To check one without our code" alone, importing
 * nothing of the service: if the README left out something a third party needs, the service's
 * real bundles fail here (test/cli/cli.int.test.ts). Keep it to the README's words.
 */
import { createHash } from 'node:crypto';

/** RFC 8785 (JCS) for what JSON.parse yields: keys sorted by UTF-16 code units, ECMAScript number and string forms. */
function jcs(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${jcs((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

const sha256 = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

interface Bundle {
  from: { sequence: number; hash: string };
  events: ({ sequence: number; payload: unknown; payloadDigest: string; previousHash: string; eventHash: string } & Record<
    string,
    unknown
  >)[];
  head: { sequence: number; headHash: string };
}

/** The first sequence whose event breaks the README's rules (or `'head'`), or null when the bundle holds. */
export function firstBreak(bundle: Bundle): number | 'head' | null {
  let sequence = bundle.from.sequence;
  let hash = bundle.from.hash;
  for (const event of bundle.events) {
    const { eventHash, ...rest } = event;
    const ok =
      event.sequence === sequence + 1 &&
      event.payloadDigest === sha256(jcs(event.payload)) &&
      event.previousHash === hash &&
      eventHash === sha256(jcs(rest));
    if (!ok) return event.sequence === sequence + 1 ? event.sequence : sequence + 1;
    sequence = event.sequence;
    hash = eventHash;
  }
  return bundle.head.sequence === sequence && bundle.head.headHash === hash ? null : 'head';
}

/** Step 3: both bundles hold, and the earlier one's head lies on the later one's chain. */
export function extendsEarlier(later: Bundle, earlier: Bundle): boolean {
  if (firstBreak(earlier) !== null || firstBreak(later) !== null) return false;
  const { sequence, headHash } = earlier.head;
  if (later.from.sequence === sequence && later.from.hash === headHash) return true;
  return later.events.some((e) => e.sequence === sequence && e.eventHash === headHash);
}
