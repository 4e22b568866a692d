/**
 * Commits wake by themselves: a transaction that appends to a workspace's ledger wakes that
 * workspace's open readers once it has committed, with no call of the caller's (the database tells
 * the runtime: db/transaction.ts CommitListeners, server/runtime.ts). One that rolls back wakes
 * nobody, and neither does a grouped member rolled back to its savepoint while the rest of its
 * transaction commits. A write no request made (the retention job's dedup.pruned) reaches an open
 * event stream at once.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query, type Tx } from '@/db';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { pruneEndedClaims } from '@/server/domain/dedup/claims';
import { appendEvents, appendEventsAtCommit, type NewEvent } from '@/server/ledger/append';
import { readHead } from '@/server/ledger/read';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { testEngine } from '../support/engine';

let app: TestApp;
beforeAll(async () => {
  // One shared group (db/group.ts): writes to different workspaces that run together share a transaction.
  app = await startTestApp({ SSE_KEEPALIVE_MS: '100', DB_SHARED_GROUPS: '1' });
});
afterAll(async () => {
  await app?.close();
});

const actorOf = (ws: TestWorkspace): Actor => ({
  type: 'system',
  id: 'system:test',
  ownerId: ws.ownerUserId,
  workspaceId: ws.workspaceId,
  trace: systemTrace(randomUUID()),
});
// A test's own event type, which the registry (server/domain/events.ts) does not know.
const noted = (note: string) =>
  ({ aggregateType: 'task', aggregateId: randomUUID(), eventType: 'test.noted', payload: { note } }) as unknown as NewEvent;
const txid = async (tx: Tx) => (await query<{ txid: string }>(tx, sql`select txid_current()::text as txid`))[0]!.txid;

/**
 * Counts the wake-ups of `ws`; each also reads the workspace's head from outside the transaction
 * (another connection on PostgreSQL), which shows what had committed when the wake-up came.
 */
function watch(ws: TestWorkspace) {
  const heads: Promise<number>[] = [];
  const stop = app.runtime.wakeups.subscribe(ws.workspaceId, () => {
    heads.push(readHead(app.runtime.db, ws.workspaceId).then((h) => h?.sequence ?? 0));
  });
  return { count: () => heads.length, heads: () => Promise.all(heads), stop };
}

describe(`commits wake by themselves (${testEngine()})`, () => {
  it('a transaction that appends wakes its workspace once it has committed; one rolled back wakes nobody', async () => {
    const ws = await app.createWorkspace();
    const woken = watch(ws);
    try {
      const [event] = await app.runtime.db.transaction((tx) => appendEvents(tx, actorOf(ws), [noted('committed')]));
      // Told before the transaction's caller is answered, and after COMMIT: the event could be read.
      expect(woken.count()).toBe(1);
      expect(await woken.heads()).toEqual([event!.sequence]);

      await expect(
        app.runtime.db.transaction(async (tx) => {
          await appendEvents(tx, actorOf(ws), [noted('rolled back')]);
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      await expect(
        app.runtime.db.transaction(async (tx) => {
          appendEventsAtCommit(tx, actorOf(ws), [noted('never appended')]);
          throw new Error('changed my mind too');
        }),
      ).rejects.toThrow('changed my mind too');
      await new Promise((r) => setImmediate(r));
      expect(woken.count()).toBe(1);

      // Appended at COMMIT, in its flight: woken too.
      await app.runtime.db.transaction(async (tx) => void appendEventsAtCommit(tx, actorOf(ws), [noted('at commit')]));
      expect(woken.count()).toBe(2);
      expect((await woken.heads())[1]).toBe(event!.sequence + 1);

      // A transaction that appends nothing wakes nobody.
      await app.runtime.db.transaction(async (tx) => txid(tx));
      expect(woken.count()).toBe(2);
    } finally {
      woken.stop();
    }
  });

  it('a grouped participant rolled back to its savepoint wakes nobody; the participants that committed do', async () => {
    const ws = await app.createWorkspace();
    const woken = watch(ws);
    try {
      // One group (the workspace's): the first member appends nothing, the second appends and fails.
      let failedIn = '';
      const [first, second] = await Promise.allSettled([
        app.runtime.db.transaction((tx) => txid(tx), { group: ws.workspaceId }),
        app.runtime.db.transaction(
          async (tx) => {
            await appendEvents(tx, actorOf(ws), [noted('taken back')]);
            failedIn = await txid(tx);
            throw new Error('member failed');
          },
          { group: ws.workspaceId },
        ),
      ]);
      expect(first.status).toBe('fulfilled');
      expect(second.status).toBe('rejected');
      expect(failedIn).toBe((first as PromiseFulfilledResult<string>).value);
      expect(woken.count()).toBe(0);
    } finally {
      woken.stop();
    }

    // A shared group: a write to one workspace commits, one to another is taken back in the same transaction.
    const [here, there] = [await app.createWorkspace(), await app.createWorkspace()];
    const [wokenHere, wokenThere] = [watch(here), watch(there)];
    try {
      let failedIn = '';
      const [kept, takenBack] = await Promise.allSettled([
        app.runtime.db.transaction(
          async (tx) => {
            appendEventsAtCommit(tx, actorOf(here), [noted('kept')]);
            return txid(tx);
          },
          { group: here.workspaceId, acrossWorkspaces: true },
        ),
        app.runtime.db.transaction(
          async (tx) => {
            appendEventsAtCommit(tx, actorOf(there), [noted('taken back')]);
            failedIn = await txid(tx);
            throw new Error('member failed');
          },
          { group: there.workspaceId, acrossWorkspaces: true },
        ),
      ]);
      expect(kept.status).toBe('fulfilled');
      expect(takenBack.status).toBe('rejected');
      expect(failedIn).toBe((kept as PromiseFulfilledResult<string>).value);
      expect(wokenHere.count()).toBe(1);
      expect(wokenThere.count()).toBe(0);
    } finally {
      wokenHere.stop();
      wokenThere.stop();
    }
  });

  it('the retention job’s dedup.pruned reaches an open event stream at once, long before its poll', async () => {
    const ws = await app.createWorkspace();
    const signal = { source: 'wake', event_key: `pruned-${randomUUID()}` };
    const claimed = await app.request('POST', '/live/dedup/claim', { key: ws.apiKey, body: { ...signal, ttl_seconds: 600 } });
    expect(claimed.status, claimed.text).toBe(200);
    const released = await app.request('POST', '/live/dedup/release', {
      key: ws.apiKey,
      body: { ...signal, run_id: claimed.body.active_run_id },
    });
    expect(released.body.released).toBe(true);

    // Idle (it has replayed and sent a keepalive) before the prune: only a wake-up can bring the
    // event within its 5 s, as it would poll after 10 s (and never, while the wake-ups are healthy).
    const reading = openLease(ws, 'lease_ms=5000&poll_ms=10000&type=dedup.pruned', 'event: dedup.pruned');
    await reading.idle;
    const pruning = Date.now();
    // Two minutes on: the released claim is past its minute of grace.
    expect(await pruneEndedClaims(app.runtime.db, new Date(Date.now() + 120_000))).toBeGreaterThanOrEqual(1);
    const text = await reading.done;
    expect((await reading.seen) - pruning).toBeLessThan(2000);
    const pruned = text.split('\n\n').filter((frame) => frame.includes('event: dedup.pruned'));
    expect(pruned).toHaveLength(1);
    expect(pruned[0]).toContain(signal.event_key);
  });
});

/**
 * An SSE lease read to its end; `idle` settles at its first keepalive (SSE_KEEPALIVE_MS=100),
 * `seen` when `awaited` first shows in it (at its end if never: Infinity).
 */
function openLease(
  ws: TestWorkspace,
  params: string,
  awaited: string,
): { idle: Promise<void>; seen: Promise<number>; done: Promise<string> } {
  let markIdle!: () => void;
  const idle = new Promise<void>((resolve) => (markIdle = resolve));
  let markSeen!: (at: number) => void;
  const seen = new Promise<number>((resolve) => (markSeen = resolve));
  const done = (async () => {
    const res = await fetch(`${app.url}/api/v1/events/stream?format=sse&${params}`, { headers: { authorization: `Bearer ${ws.apiKey}` } });
    let text = '';
    if (res.body) {
      const decoder = new TextDecoder();
      const reader = res.body.getReader();
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        text += decoder.decode(read.value, { stream: true });
        if (text.includes(': keepalive')) markIdle();
        if (text.includes(awaited)) markSeen(Date.now());
      }
    }
    markIdle();
    markSeen(Infinity);
    return text;
  })();
  return { idle, seen, done };
}
