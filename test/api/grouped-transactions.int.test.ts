/**
 * Grouped transactions (db/group.ts) on each engine: calls of one group that run together share
 * one transaction, each but the first in a savepoint; one participant's failure takes back its own
 * work only; a failed COMMIT fails them all and writes nothing.
 */
import { readFileSync } from 'node:fs';
import { inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase, query, type DatabaseHandle, type Tx } from '@/db';
import { atCommit, runStatement, transactionLocals } from '@/db/connection';
import { MAX_PARTICIPANTS } from '@/db/group';
import { systemTrace } from '@/server/domain/actor';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import { instanceSecrets } from '@/db/schema';
import { createTestRuntime, testEngine, type TestRuntime } from '../support/engine';

let runtime: TestRuntime | undefined;
let handle: DatabaseHandle;
/** With one shared group (DB_SHARED_GROUPS=1): every shared write may join it. The same database on PostgreSQL; another on PGlite. */
let oneShared: DatabaseHandle;

const open = (sharedGroups?: number) =>
  runtime
    ? openDatabase({ url: runtime.databaseUrl!, poolMax: 4, sharedGroups })
    : openDatabase({ dataDir: 'memory://', pgliteSnapshot: new Blob([readFileSync(inject('pgliteSnapshot'))]), sharedGroups });

beforeAll(async () => {
  if (testEngine() === 'postgres') runtime = await createTestRuntime();
  handle = await open();
  oneShared = await open(1);
});
afterAll(async () => {
  await oneShared?.close();
  await handle?.close();
  await runtime?.close();
});

let run = 0;
/** A participant: writes a row named `name`, answers its transaction's id, and fails after writing if told to. */
const participant =
  (name: string, fail = false) =>
  async (tx: Tx) => {
    await tx.insert(instanceSecrets).values({ name, value: 'v' });
    const [row] = await query<{ txid: string }>(tx, sql`select txid_current()::text as txid`);
    if (fail) throw new Error(`${name} failed`);
    return row!.txid;
  };
/** Which of `names` were written (to `db`: on PGlite the two handles are two databases). */
const stored = async (names: string[], db = handle) =>
  (await db.db.select({ name: instanceSecrets.name }).from(instanceSecrets).where(inArray(instanceSecrets.name, names)))
    .map((r) => r.name)
    .sort();

describe(`grouped transactions (${testEngine()})`, () => {
  it('share one transaction when they run together, and each answers its own result', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `group-${++run}-${i}`);
    const txids = await Promise.all(names.map((n) => handle.db.transaction(participant(n), { group: 'a' })));
    expect(new Set(txids).size).toBe(1);
    expect(await stored(names)).toEqual([...names].sort());
    // Another group, and ungrouped calls, get transactions of their own.
    const [other, plain] = await Promise.all([
      handle.db.transaction(participant(`group-${++run}-b`), { group: 'b' }),
      handle.db.transaction(participant(`group-${++run}-plain`)),
    ]);
    expect(new Set([txids[0], other, plain]).size).toBe(3);
  });

  it('give each participant transaction locals of its own (the ledger keeps a participant’s pending append there)', async () => {
    const key = Symbol('a test’s local');
    const seen = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        handle.db.transaction(
          async (tx) => {
            const locals = transactionLocals(tx)!;
            const before = locals[key];
            locals[key] = i;
            const txid = await participant(`group-${++run}-local-${i}`)(tx);
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

  it('take back a failing participant’s work only; the others commit', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `group-${++run}-${i}`);
    const outcomes = await Promise.allSettled(
      names.map((n, i) => handle.db.transaction(participant(n, i === 3 || i === 6), { group: 'a' })),
    );
    expect(outcomes.map((o) => o.status)).toEqual(names.map((_, i) => (i === 3 || i === 6 ? 'rejected' : 'fulfilled')));
    expect((outcomes[3] as PromiseRejectedResult).reason.message).toBe(`${names[3]} failed`);
    const txids = outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<string>).value);
    expect(new Set(txids).size).toBe(1);
    expect(await stored(names)).toEqual(names.filter((_, i) => i !== 3 && i !== 6).sort());
  });

  it('when the first participant fails, roll it back and run the others in a transaction of their own', async () => {
    const names = Array.from({ length: 5 }, (_, i) => `group-${++run}-${i}`);
    const outcomes = await Promise.allSettled(names.map((n, i) => handle.db.transaction(participant(n, i === 0), { group: 'a' })));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(await stored(names)).toEqual(names.slice(1).sort());
  });

  /** Participants of one group, the third leaving `statement` for COMMIT. */
  const leaving = (names: string[], statement: string) =>
    Promise.allSettled(
      names.map((n, i) =>
        handle.db.transaction(
          async (tx) => {
            const txid = await participant(n)(tx);
            if (i === 2) atCommit(tx, () => runStatement(tx)(statement, []));
            return txid;
          },
          { group: 'a' },
        ),
      ),
    );

  it('when a participant’s statement left for COMMIT fails on its own account, fail that participant only and run the others again', async () => {
    const names = Array.from({ length: 4 }, (_, i) => `group-${++run}-${i}`);
    // A duplicate key: the third participant's own failure, found only at COMMIT.
    const outcomes = await leaving(names, `insert into instance_secrets (name, value) values ('${names[0]}', 'again')`);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
    const txids = outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<string>).value);
    expect(new Set(txids).size).toBe(1);
    expect(await stored(names)).toEqual([names[0], names[1], names[3]].sort());
  });

  it('fail every participant, and write nothing, when the transaction fails as a whole at COMMIT', async () => {
    const names = Array.from({ length: 4 }, (_, i) => `group-${++run}-${i}`);
    // A serialization failure: the transaction's, not the statement's.
    const outcomes = await leaving(names, `do $$ begin raise exception 'serialization' using errcode = '40001'; end $$`);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(await stored(names)).toEqual([]);
  });

  it(`take at most ${MAX_PARTICIPANTS} participants: the rest wait for a group of their own`, async () => {
    const names = Array.from({ length: MAX_PARTICIPANTS + 5 }, (_, i) => `group-${++run}-${i}`);
    const txids = await Promise.all(names.map((n) => handle.db.transaction(participant(n), { group: 'a' })));
    expect(new Set(txids.slice(0, MAX_PARTICIPANTS)).size).toBe(1);
    expect(new Set(txids).size).toBe(2);
    expect(await stored(names)).toHaveLength(names.length);
  });
});

describe(`shared groups: writes to several workspaces in one transaction (${testEngine()})`, () => {
  const workspaces = Array.from({ length: 20 }, (_, i) => `workspace-${i}`);
  const shared = (db: DatabaseHandle, workspace: string, work: (tx: Tx) => Promise<string>) =>
    db.db.transaction(work, { group: workspace, acrossWorkspaces: true });

  it('share one transaction over workspaces, spread over DB_SHARED_GROUPS of them; per-workspace groups stay apart', async () => {
    const one = await Promise.all(workspaces.map((w) => shared(oneShared, w, participant(`group-${++run}-${w}`))));
    expect(new Set(one).size).toBe(1);
    // The default, two: these twenty workspaces hash into both (a fixed spread: FNV-1a of the id).
    const two = await Promise.all(workspaces.map((w) => shared(handle, w, participant(`group-${++run}-${w}`))));
    expect(new Set(two).size).toBe(2);
    // A write to workspace-0 that does not say acrossWorkspaces joins that workspace's own group.
    const [own, joined] = await Promise.all([
      oneShared.db.transaction(participant(`group-${++run}-own`), { group: workspaces[0]! }),
      shared(oneShared, workspaces[0]!, participant(`group-${++run}-joined`)),
      shared(oneShared, workspaces[1]!, participant(`group-${++run}-joined`)),
    ]);
    expect(own).not.toBe(joined);
  });

  it('send the statements left for COMMIT in workspace order, participant order within a workspace', async () => {
    const order = ['workspace-c', 'workspace-a', 'workspace-b', 'workspace-a', 'workspace-c'];
    const sent: string[] = [];
    const leave = (workspace: string, i: number) => async (tx: Tx) => {
      const txid = await participant(`group-${++run}-${i}`)(tx);
      atCommit(tx, () => {
        sent.push(`${workspace}#${i}`);
        return runStatement(tx)('select 1', []);
      });
      return txid;
    };
    const txids = await Promise.all(order.map((w, i) => shared(oneShared, w, leave(w, i))));
    expect(new Set(txids).size).toBe(1);
    expect(sent).toEqual(['workspace-a#1', 'workspace-a#3', 'workspace-b#2', 'workspace-c#0', 'workspace-c#4']);
    // A per-workspace group keeps participant order (there is one workspace).
    sent.length = 0;
    await Promise.all(order.map((_, i) => oneShared.db.transaction(leave('one', i), { group: 'one' })));
    expect(sent).toEqual(order.map((_, i) => `one#${i}`));
  });

  it('refuse a ledger lock before COMMIT to a participant of a shared group; that participant alone fails', async () => {
    const workspaceId = '00000000-0000-4000-8000-000000000000';
    const actor = { type: 'system' as const, id: 'system:test', ownerId: workspaceId, workspaceId, trace: systemTrace('t') };
    const early = [
      (tx: Tx) => lockWorkspaceLedger(tx, workspaceId),
      // A type no service writes, outside the registry of event types on purpose: the append is refused before it.
      (tx: Tx) =>
        appendEvents(tx, actor, [
          { aggregateType: 'task', aggregateId: workspaceId, eventType: 'test.noted', payload: {} } as unknown as NewEvent,
        ]),
    ];
    for (const lock of early) {
      const names = workspaces.slice(0, 3).map((w) => `group-${++run}-${w}`);
      const outcomes = await Promise.allSettled(
        names.map((n, i) =>
          shared(oneShared, workspaces[i]!, async (tx) => {
            const txid = await participant(n)(tx);
            if (i === 1) await lock(tx);
            return txid;
          }),
        ),
      );
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/shared across workspaces takes ledger locks only at COMMIT/);
      expect(await stored(names, oneShared)).toEqual([names[0], names[2]].sort());
    }
  });
});
