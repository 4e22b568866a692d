/**
 * Installed in every integration test file (vitest.config.ts), which run with LOG_LEVEL=debug: the
 * service's log lines (JSON on stderr, server/log.ts) are kept here instead of written, and once a
 * file's tests are done every line is searched for anything that could be a credential: an API
 * key, a webhook signing secret, an invitation or setup token, a bearer header, a session token, or
 * any value under a key named like one (password, secret, token, cookie, authorization), a password
 * hash; and for text of any request body the file sent (noteRequestBody). A line that holds one
 * fails the file. Over the whole suite, that is every request the suite makes.
 */
import { afterAll, expect } from 'vitest';
import { bodyStrings, bodyStringsIn, credentialsIn } from './secret-scan';

const sentStrings = new Set<string>();

/** Remembers what a request's body said (test/support/app.ts and internal.ts call it): no log line may repeat it. */
export function noteRequestBody(body: unknown): void {
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      // Not JSON: the text as a whole is what must not be logged.
    }
  }
  bodyStrings(body, sentStrings);
}

const lines: string[] = [];
const write = process.stderr.write.bind(process.stderr) as (...args: unknown[]) => boolean;
process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
  if (!text.startsWith('{"time":')) return write(chunk, ...rest);
  lines.push(...text.split('\n').filter((l) => l.length > 0));
  const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
  done?.();
  return true;
}) as typeof process.stderr.write;

/** The log lines written so far in this file (parsed). */
export function capturedLogLines(): Record<string, unknown>[] {
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

afterAll(() => {
  const found: string[] = [];
  for (const line of lines) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      found.push(`not JSON: ${line.slice(0, 80)}`);
      continue;
    }
    const msg = (parsed as { msg?: string }).msg ?? '?';
    const here = credentialsIn(parsed);
    if (here.length > 0) found.push(`${here.join('; ')} in ${msg}`);
    // The access log's lines have a fixed shape of ids and numbers (server/api/rest.ts): the others are searched.
    if (msg !== 'request') {
      const repeated = bodyStringsIn(line, sentStrings);
      if (repeated.length > 0) found.push(`request body text (${repeated.map((v) => v.slice(0, 40)).join(', ')}) in ${msg}`);
    }
  }
  expect(found, 'log lines holding a credential').toEqual([]);
});
