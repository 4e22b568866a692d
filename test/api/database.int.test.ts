/**
 * The database handle (db/index.ts) on each engine: its transactions, and the statement runner
 * (db/connection.ts) that statements built once (db/compiled.ts) run through, without reaching
 * into Drizzle's private session for the driver.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { drizzle } from 'drizzle-orm/pglite';
import { eq, is, sql } from 'drizzle-orm';
import { PgDatabase } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '@/db';
import { compiled, rowPlaceholders } from '@/db/compiled';
import { runStatement } from '@/db/connection';
import { instanceSecrets } from '@/db/schema';
import { createTestRuntime, testEngine, type TestRuntime } from '../support/engine';

let runtime: TestRuntime | undefined;
let handle: DatabaseHandle;
const logged: string[] = [];

beforeAll(async () => {
  // A migrated database of this run's engine, opened a second time with a logger (and, on
  // PostgreSQL, a pool of several connections, so that "the wrong connection" is possible).
  const logger = { logQuery: (text: string) => void logged.push(text) };
  if (testEngine() === 'postgres') {
    runtime = await createTestRuntime();
    handle = await openDatabase({ url: runtime.databaseUrl!, poolMax: 4, logger });
  } else {
    handle = await openDatabase({ dataDir: 'memory://', pgliteSnapshot: new Blob([readFileSync(inject('pgliteSnapshot'))]), logger });
  }
});
afterAll(async () => {
  await handle?.close();
  await runtime?.close();
});

const insertSecret = compiled<{ name: string; value: string }>((db, p) =>
  db.insert(instanceSecrets).values({ name: p('name'), value: p('value') }),
);
const secretNamed = compiled<{ name: string }, { value: string }>((db, p) =>
  db
    .select({ value: instanceSecrets.value })
    .from(instanceSecrets)
    .where(eq(instanceSecrets.name, p('name'))),
);

// Two rows' worth of values in one statement, each from its own record (as POST /work's task and receipt).
const insertTwoSecrets = compiled<{ first: { name: string; value: string }; second: { name: string; value: string } }>((db, p) =>
  db.insert(instanceSecrets).values([rowPlaceholders(['name', 'value'], 'first', p), rowPlaceholders(['name', 'value'], 'second', p)]),
);

describe('the database handle', () => {
  it('fills a compiled statement’s grouped placeholders from the record under each group, and names a missing one', async () => {
    const [a, b] = [`t-${randomUUID()}`, `t-${randomUUID()}`];
    await handle.db.transaction((tx) => insertTwoSecrets(tx, { first: { name: a, value: 'one' }, second: { name: b, value: 'two' } }));
    expect(await secretNamed(handle.db, { name: a })).toEqual([{ value: 'one' }]);
    expect(await secretNamed(handle.db, { name: b })).toEqual([{ value: 'two' }]);
    const missing = { first: { name: `t-${randomUUID()}`, value: 'x' }, second: { name: `t-${randomUUID()}` } };
    await expect(handle.db.transaction((tx) => insertTwoSecrets(tx, missing as never))).rejects.toThrow(
      'No value for placeholder "second.value"',
    );
  });

  it('gives a transaction that is a whole Drizzle database (query builder, execute, its class) and runs compiled statements in it', async () => {
    const name = `t-${randomUUID()}`;
    const seen = await handle.db.transaction(async (tx) => {
      await insertSecret(tx, { name, value: 'compiled first' });
      const rows = await tx.select({ value: instanceSecrets.value }).from(instanceSecrets).where(eq(instanceSecrets.name, name));
      await tx.update(instanceSecrets).set({ value: 'then drizzle' }).where(eq(instanceSecrets.name, name));
      await tx.execute(sql`select 1`);
      return { rows, isDatabase: is(tx, PgDatabase), again: await secretNamed(tx, { name }) };
    });
    expect(seen).toEqual({ rows: [{ value: 'compiled first' }], isDatabase: true, again: [{ value: 'then drizzle' }] });
  });

  it('runs a compiled statement on the transaction’s own connection: it sees the transaction’s uncommitted row', async () => {
    // On PostgreSQL another connection of the pool would not see the row; on PGlite a statement
    // outside the transaction would wait for it to end, and so never return.
    const name = `t-${randomUUID()}`;
    const seen = await handle.db.transaction(async (tx) => {
      await tx.insert(instanceSecrets).values({ name, value: 'uncommitted' });
      return secretNamed(tx, { name });
    });
    expect(seen).toEqual([{ value: 'uncommitted' }]);
  });

  it('takes a compiled statement’s write back with the transaction, and keeps it with a commit', async () => {
    const [dropped, kept] = [`t-${randomUUID()}`, `t-${randomUUID()}`];
    const refused = new Error('roll back');
    await expect(
      handle.db.transaction(async (tx) => {
        await insertSecret(tx, { name: dropped, value: 'x' });
        throw refused;
      }),
    ).rejects.toBe(refused);
    await handle.db.transaction((tx) => insertSecret(tx, { name: kept, value: 'y' }));
    expect(await secretNamed(handle.db, { name: dropped })).toEqual([]);
    expect(await secretNamed(handle.db, { name: kept })).toEqual([{ value: 'y' }]);
  });

  it('sends a compiled statement when it is called, not when it is first awaited: the one called first runs first', async () => {
    // POST /work relies on it: its insert is called before the ledger append, so the workspace's
    // append lock is taken after the insert has run, not held while it runs. postgres.js's queries
    // are lazy (sent when awaited): without execute() the read below would run before the insert.
    const name = `t-${randomUUID()}`;
    const seen = await handle.db.transaction(async (tx) => {
      const inserted = insertSecret(tx, { name, value: 'first' });
      const read = await secretNamed(tx, { name });
      await inserted;
      return read;
    });
    expect(seen).toEqual([{ value: 'first' }]);
  });

  it('tells its logger every statement, Drizzle’s and compiled ones, in the order they were sent', async () => {
    const name = `t-${randomUUID()}`;
    const from = logged.length;
    await handle.db.transaction(async (tx) => {
      await tx.select().from(instanceSecrets).where(eq(instanceSecrets.name, name));
      await insertSecret(tx, { name, value: 'z' });
    });
    await secretNamed(handle.db, { name });
    const sent = logged.slice(from);
    expect(sent).toHaveLength(3);
    expect(sent[0]).toMatch(/^select .* from "instance_secrets"/);
    expect(sent[1]).toMatch(/^insert into "instance_secrets"/);
    expect(sent[2]).toMatch(/^select "value" from "instance_secrets"/);
  });

  it('refuses, with a clear error, to run a compiled statement on a database it did not open', async () => {
    const stranger = drizzle({ connection: { dataDir: 'memory://' } });
    try {
      await expect(secretNamed(stranger as never, { name: 'x' })).rejects.toThrow(/not opened by openDatabase/);
      expect(() => runStatement({})).toThrow(/no statement runner/);
    } finally {
      await stranger.$client.close();
    }
  });
});
