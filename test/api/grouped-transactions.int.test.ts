/**
 * Grouped transactions (db/group.ts) on each engine: calls of one group that run together share
 * one transaction, each but the first in a savepoint; one member's failure takes back its own
 * work only; a failed COMMIT fails them all and writes nothing.
 */
import { readFileSync } from 'node:fs';
import { inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase, query, type DatabaseHandle, type Tx } from '@/db';
import { atCommit, runStatement, transactionLocals } from '@/db/connection';
import { MAX_MEMBERS } from '@/db/group';
import { instanceSecrets } from '@/db/schema';
import { createTestRuntime, testEngine, type TestRuntime } from '../support/engine';

let runtime: TestRuntime | undefined;
let handle: DatabaseHandle;

beforeAll(async () => {
  if (testEngine() === 'postgres') {
    runtime = await createTestRuntime();
    handle = await openDatabase({ url: runtime.databaseUrl!, poolMax: 4 });
  } else {
    handle = await openDatabase({ dataDir: 'memory://', pgliteSnapshot: new Blob([readFileSync(inject('pgliteSnapshot'))]) });
  }
});
afterAll(async () => {
  await handle?.close();
  await runtime?.close();
});

let run = 0;
/** A member: writes a row named `name`, answers its transaction's id, and fails after writing if told to. */
const member =
  (name: string, fail = false) =>
  async (tx: Tx) => {
    await tx.insert(instanceSecrets).values({ name, value: 'v' });
    const [row] = await query<{ txid: string }>(tx, sql`select txid_current()::text as txid`);
    if (fail) throw new Error(`${name} failed`);
    return row!.txid;
  };
const stored = async (names: string[]) =>
  (await handle.db.select({ name: instanceSecrets.name }).from(instanceSecrets).where(inArray(instanceSecrets.name, names)))
    .map((r) => r.name)
    .sort();

describe(`grouped transactions (${testEngine()})`, () => {
  it('share one transaction when they run together, and each answers its own result', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `group-${++run}-${i}`);
    const txids = await Promise.all(names.map((n) => handle.db.transaction(member(n), { group: 'a' })));
    expect(new Set(txids).size).toBe(1);
    expect(await stored(names)).toEqual([...names].sort());
    // Another group, and ungrouped calls, get transactions of their own.
    const [other, plain] = await Promise.all([
      handle.db.transaction(member(`group-${++run}-b`), { group: 'b' }),
      handle.db.transaction(member(`group-${++run}-plain`)),
    ]);
    expect(new Set([txids[0], other, plain]).size).toBe(3);
  });

  it('give each member transaction locals of its own (the ledger keeps a member’s pending append there)', async () => {
    const key = Symbol('a test’s local');
    const seen = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        handle.db.transaction(
          async (tx) => {
            const locals = transactionLocals(tx)!;
            const before = locals[key];
            locals[key] = i;
            const txid = await member(`group-${++run}-local-${i}`)(tx);
            return { txid, before, after: locals[key] };
          },
          { group: 'locals' },
        ),
      ),
    );
    expect(new Set(seen.map((s) => s.txid)).size).toBe(1);
    expect(seen.map(({ before, after }) => ({ before, after }))).toEqual(
      Array.from({ length: 5 }, (_, i) => ({ before: undefined, after: i })),
    );
    // A database is no transaction: it has none.
    expect(transactionLocals(handle.db)).toBeUndefined();
  });

  it('take back a failing member’s work only; the others commit', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `group-${++run}-${i}`);
    const outcomes = await Promise.allSettled(names.map((n, i) => handle.db.transaction(member(n, i === 3 || i === 6), { group: 'a' })));
    expect(outcomes.map((o) => o.status)).toEqual(names.map((_, i) => (i === 3 || i === 6 ? 'rejected' : 'fulfilled')));
    expect((outcomes[3] as PromiseRejectedResult).reason.message).toBe(`${names[3]} failed`);
    const txids = outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<string>).value);
    expect(new Set(txids).size).toBe(1);
    expect(await stored(names)).toEqual(names.filter((_, i) => i !== 3 && i !== 6).sort());
  });

  it('when the first member fails, roll it back and run the others in a transaction of their own', async () => {
    const names = Array.from({ length: 5 }, (_, i) => `group-${++run}-${i}`);
    const outcomes = await Promise.allSettled(names.map((n, i) => handle.db.transaction(member(n, i === 0), { group: 'a' })));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(await stored(names)).toEqual(names.slice(1).sort());
  });

  /** Members of one group, the third leaving `statement` for COMMIT. */
  const leaving = (names: string[], statement: string) =>
    Promise.allSettled(
      names.map((n, i) =>
        handle.db.transaction(
          async (tx) => {
            const txid = await member(n)(tx);
            if (i === 2) atCommit(tx, () => runStatement(tx)(statement, []));
            return txid;
          },
          { group: 'a' },
        ),
      ),
    );

  it('when a member’s statement left for COMMIT fails on its own account, fail that member only and run the others again', async () => {
    const names = Array.from({ length: 4 }, (_, i) => `group-${++run}-${i}`);
    // A duplicate key: the third member's own failure, found only at COMMIT.
    const outcomes = await leaving(names, `insert into instance_secrets (name, value) values ('${names[0]}', 'again')`);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
    const txids = outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<string>).value);
    expect(new Set(txids).size).toBe(1);
    expect(await stored(names)).toEqual([names[0], names[1], names[3]].sort());
  });

  it('fail every member, and write nothing, when the transaction fails as a whole at COMMIT', async () => {
    const names = Array.from({ length: 4 }, (_, i) => `group-${++run}-${i}`);
    // A serialization failure: the transaction's, not the statement's.
    const outcomes = await leaving(names, `do $$ begin raise exception 'serialization' using errcode = '40001'; end $$`);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(await stored(names)).toEqual([]);
  });

  it(`take at most ${MAX_MEMBERS} members: the rest wait for a group of their own`, async () => {
    const names = Array.from({ length: MAX_MEMBERS + 5 }, (_, i) => `group-${++run}-${i}`);
    const txids = await Promise.all(names.map((n) => handle.db.transaction(member(n), { group: 'a' })));
    expect(new Set(txids.slice(0, MAX_MEMBERS)).size).toBe(1);
    expect(new Set(txids).size).toBe(2);
    expect(await stored(names)).toHaveLength(names.length);
  });
});
