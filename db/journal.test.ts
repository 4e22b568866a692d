/**
 * The migrations' journal as drizzle's migrator reads it. On a database already migrated, the
 * migrator applies only the migrations stamped (`when`) later than the newest it has applied: a new
 * migration stamped earlier than one before it is skipped on every existing database, silently,
 * while fresh ones (and so the test suite) get it. drizzle-kit stamps a new migration with the
 * clock, and the journal's earlier stamps run ahead of it, so a new entry's stamp is set by hand.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const journal = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'drizzle', 'meta', '_journal.json'), 'utf8')) as {
  entries: { idx: number; when: number; tag: string }[];
};

describe('drizzle/meta/_journal.json', () => {
  it('stamps each migration later than the one before it, so an existing database applies it', () => {
    const late = journal.entries.filter((e, i) => i > 0 && e.when <= journal.entries[i - 1]!.when).map((e) => e.tag);
    expect(late, 'set their "when" past the previous entry').toEqual([]);
  });

  it('numbers the entries in order, each with its file', () => {
    journal.entries.forEach((e, i) => {
      expect(e.idx).toBe(i);
      expect(e.tag.startsWith(String(i).padStart(4, '0'))).toBe(true);
      expect(() => readFileSync(path.join(import.meta.dirname, '..', 'drizzle', `${e.tag}.sql`))).not.toThrow();
    });
  });
});
