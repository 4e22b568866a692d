/**
 * GET /events/stream?format=sse: bounded leases read with a real EventSource client over HTTP while
 * writers append; replay by cursor, Last-Event-ID and last_event_id; filters; keepalives; lease end;
 * wake-up on commit; a revoked key ending its leases; idle leases costing no database query (counted
 * below the driver: PGlite's protocol entry point, PostgreSQL's wire protocol through a proxy); the
 * poll fallback while PostgreSQL's LISTEN is down.
 */
import { randomUUID } from 'node:crypto';
import { EventSource } from 'eventsource';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '@/server/domain/api-keys/api-keys';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { parseEnv } from '@/server/env';
import { WAKE_CHANNEL } from '@/server/ledger/wake';
import { createRuntime } from '@/server/runtime';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { createRestHandler } from '@/server/api/rest';
import { startBackgroundJobs } from '@/server/jobs';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { testEngine } from '../support/engine';
import { startDbProxy } from '../support/db-proxy';
import { serveApi } from '../support/http';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ SSE_KEEPALIVE_MS: '100' });
});
afterAll(async () => {
  await app?.close();
});

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** Splits an SSE body into frames (blank-line separated), keeping comments. */
function framesOf(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const frame: Frame = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) frame.comment = line.slice(1).trim();
        else {
          const at = line.indexOf(': ');
          const field = line.slice(0, at) as keyof Frame;
          frame[field] = line.slice(at + 2);
        }
      }
      return frame;
    });
}

const work = (ws: TestWorkspace = app.ws, title = `w ${randomUUID().slice(0, 6)}`) =>
  app.request('POST', '/work', { key: ws.apiKey, body: { title } });

const systemActor = (ws: TestWorkspace): Actor => ({
  type: 'system',
  id: 'system:test',
  ownerId: ws.ownerUserId,
  workspaceId: ws.workspaceId,
  trace: systemTrace(randomUUID()),
});

async function freshWorkspace(): Promise<TestWorkspace> {
  return app.createWorkspace();
}

/** Opens a lease over HTTP and reads it to its end. */
/**
 * Opens a lease and reads it to its end. `idle` settles once the lease has replayed and waits (its
 * first keepalive, SSE_KEEPALIVE_MS=100 here): a commit after that reaches it only by a wake-up or
 * a poll, which is what the tests below tell apart.
 */
function lease(ws: TestWorkspace, query: string, headers: Record<string, string> = {}) {
  let markIdle!: () => void;
  const idle = new Promise<void>((resolve) => (markIdle = resolve));
  const done = (async () => {
    const res = await fetch(`${app.url}/api/v1/events/stream?format=sse&${query}`, {
      headers: { authorization: `Bearer ${ws.apiKey}`, ...headers },
    });
    let text = '';
    if (res.body) {
      const decoder = new TextDecoder();
      const reader = res.body.getReader();
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        text += decoder.decode(read.value, { stream: true });
        if (text.includes(': keepalive')) markIdle();
      }
    }
    markIdle();
    return { res, text };
  })();
  return Object.assign(done, { idle });
}

describe('GET /events/stream?format=sse', () => {
  it('replays the workspace’s events as id/event/data frames and ends with lease_end and the next cursor', async () => {
    const ws = await freshWorkspace();
    for (let i = 0; i < 3; i++) expect((await work(ws)).status).toBe(201);
    const res = await app.request('GET', '/events/stream?format=sse&lease_ms=200&poll_ms=20', { key: ws.apiKey });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = framesOf(res.text);
    const events = frames.filter((f) => f.data && f.event !== 'lease_end');
    const parsed = events.map((f) => JSON.parse(f.data!));
    // The workspace's own first events (workspace, owner, Inbox, key), then three work.created: all, in order.
    expect(parsed.map((e) => e.sequence)).toEqual(Array.from({ length: parsed.length }, (_, i) => i + 1));
    expect(parsed[0].eventType).toBe('workspace.created');
    expect(events.slice(-3).map((f) => f.event)).toEqual(['work.created', 'work.created', 'work.created']);
    for (let i = 1; i < parsed.length; i++) expect(parsed[i].previousHash).toBe(parsed[i - 1].eventHash);
    const end = frames[frames.length - 1]!;
    expect(end.event).toBe('lease_end');
    const { nextCursor } = JSON.parse(end.data!);
    expect(nextCursor).toBe(events[events.length - 1]!.id);
    // The ids are the cursors of the JSON form: a page after the last id is empty.
    const page = await app.request('GET', `/events/stream?cursor=${encodeURIComponent(nextCursor)}`, { key: ws.apiKey });
    expect(page.body.data).toEqual([]);
  });

  it('resumes after a cursor, last_event_id, or the Last-Event-ID header (which wins)', async () => {
    const ws = await freshWorkspace();
    for (let i = 0; i < 4; i++) await work(ws);
    const all = framesOf((await lease(ws, 'lease_ms=100&poll_ms=10')).text).filter((f) => f.id);
    const third = all[2]!.id!;
    const fifth = all[4]!.id!;
    const seqs = (text: string) =>
      framesOf(text)
        .filter((f) => f.id)
        .map((f) => JSON.parse(f.data!).sequence);
    const afterThird = all.slice(3).map((f) => JSON.parse(f.data!).sequence);
    expect(afterThird.length).toBeGreaterThanOrEqual(4);
    expect(seqs((await lease(ws, `lease_ms=100&poll_ms=10&cursor=${encodeURIComponent(third)}`)).text)).toEqual(afterThird);
    expect(seqs((await lease(ws, `lease_ms=100&poll_ms=10&last_event_id=${encodeURIComponent(third)}`)).text)).toEqual(afterThird);
    const header = await lease(ws, `lease_ms=100&poll_ms=10&cursor=${encodeURIComponent(third)}`, { 'last-event-id': fifth });
    expect(seqs(header.text)).toEqual(afterThird.slice(2));
    // An empty Last-Event-ID (or last_event_id) counts as not given: the cursor applies.
    const empty = await lease(ws, `lease_ms=100&poll_ms=10&last_event_id=&cursor=${encodeURIComponent(third)}`, { 'last-event-id': '' });
    expect(seqs(empty.text)).toEqual(afterThird);
  });

  it('filters by type', async () => {
    const ws = await freshWorkspace();
    await work(ws);
    const res = await app.request('GET', '/events/stream?format=sse&lease_ms=100&poll_ms=10&type=api_key.created&type=work.created', {
      key: ws.apiKey,
    });
    expect(
      framesOf(res.text)
        .filter((f) => f.id)
        .map((f) => f.event),
    ).toEqual(['api_key.created', 'work.created']);
  });

  it('refuses another workspace’s cursor or Last-Event-ID, bad settings and unknown parameters before streaming', async () => {
    const ws = await freshWorkspace();
    const mine = framesOf((await lease(app.ws, 'lease_ms=50&poll_ms=10')).text).find((f) => f.id)!.id!;
    const ownFirst = framesOf((await lease(ws, 'lease_ms=50&poll_ms=10')).text).find((f) => f.id)!.id!;
    const cases: [string, Record<string, string>, number, string][] = [
      [`cursor=${encodeURIComponent(mine)}`, {}, 400, 'invalid_cursor'],
      ['', { 'last-event-id': mine }, 400, 'invalid_cursor'],
      ['last_event_id=forged', {}, 400, 'invalid_cursor'],
      // A cursor the header outranks is still checked: a forged one is refused, not ignored.
      [`cursor=forged`, { 'last-event-id': ownFirst }, 400, 'invalid_cursor'],
      [`last_event_id=${encodeURIComponent(mine)}`, { 'last-event-id': ownFirst }, 400, 'invalid_cursor'],
      ['lease_ms=0', {}, 400, 'validation_failed'],
      ['lease_ms=300001', {}, 400, 'validation_failed'],
      ['poll_ms=10001', {}, 400, 'validation_failed'],
      ['type=Bad!', {}, 400, 'validation_failed'],
      ['since=1', {}, 400, 'unknown_field'],
    ];
    for (const [query, headers, status, code] of cases) {
      const res = await app.request('GET', `/events/stream?format=sse&${query}`, { key: ws.apiKey, headers });
      expect(res.status, query).toBe(status);
      expect(res.body.error.code, query).toBe(code);
    }
    expect((await app.request('GET', '/events/stream?format=sse', { key: null })).status).toBe(401);
    // Lease settings belong to format=sse.
    expect((await app.request('GET', '/events/stream?lease_ms=100', { key: ws.apiKey })).status).toBe(400);
  });

  it('sends keepalive comments while nothing happens', async () => {
    const ws = await freshWorkspace();
    const { text } = await lease(
      ws,
      'lease_ms=450&poll_ms=10000&cursor=' +
        encodeURIComponent(
          framesOf((await lease(ws, 'lease_ms=20')).text)
            .filter((f) => f.id)
            .pop()!.id!,
        ),
    );
    expect(framesOf(text).filter((f) => f.comment === 'keepalive').length).toBeGreaterThanOrEqual(2);
  });

  it('a commit wakes an open lease at once, long before its next poll', async () => {
    const ws = await freshWorkspace();
    const started = Date.now();
    const reading = lease(ws, 'lease_ms=3000&poll_ms=10000&type=work.created');
    await reading.idle;
    const written = Date.now();
    await work(ws, 'wake me');
    const { text } = await reading;
    const frames = framesOf(text).filter((f) => f.event === 'work.created');
    expect(frames).toHaveLength(1);
    // Delivered within the lease (3 s) though the poll interval is 10 s: only the wake-up can do that.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(written - started).toBeLessThan(3000);
  });

  it('a revoked key ends its open leases', async () => {
    const ws = await freshWorkspace();
    const key = await app.runtime.db.transaction(async (tx) => {
      const actor = systemActor(ws);
      return createApiKey(tx, actor, { name: 'to revoke' });
    });
    const started = Date.now();
    const reading = lease({ ...ws, apiKey: key.secret }, 'lease_ms=20000&poll_ms=10000');
    await reading.idle;
    // Called directly, with no request around it: the commit itself wakes the lease (its poll
    // would come after 10 s).
    await app.runtime.db.transaction(async (tx) => {
      const actor = systemActor(ws);
      await revokeApiKey(tx, actor, { keyId: key.id });
    });
    const { text } = await reading;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(framesOf(text).pop()!.event).toBe('lease_end');
  });

  it('revoking a key in the interface ends its open lease at once, with no poll', async () => {
    const ws = await freshWorkspace();
    const owner = await app.member('owner', ws.workspaceId);
    const trpc = createInternalTrpcHandler(async () => app.runtime);
    const key = await app.runtime.db.transaction((tx) => createApiKey(tx, systemActor(ws), { name: 'to revoke in the UI' }));
    const started = Date.now();
    const reading = lease({ ...ws, apiKey: key.secret }, 'lease_ms=20000&poll_ms=10000');
    await reading.idle;
    const revokedAt = Date.now();
    const res = await trpc(
      new Request('http://127.0.0.1:3000/api/trpc/apiKeys.revoke', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          cookie: `next-auth.session-token=${owner.session}`,
          origin: 'http://127.0.0.1:3000',
        },
        body: JSON.stringify({ workspace_id: ws.workspaceId, key_id: key.id }),
      }),
    );
    expect(res.status).toBe(200);
    const { text } = await reading;
    // Long before the lease's end (20 s) or its poll (10 s): the revocation's own commit woke it.
    expect(Date.now() - revokedAt).toBeLessThan(3000);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(framesOf(text).pop()!.event).toBe('lease_end');
  });

  it('a decision timed out by the background sweep reaches an open lease at once, with no poll', async () => {
    const ws = await freshWorkspace();
    const raised = await app.request('POST', '/decisions', {
      key: ws.apiKey,
      body: { workspace_id: ws.workspaceId, title: 'Times out', due_at: new Date(Date.now() + 300).toISOString() },
    });
    expect(raised.status).toBe(201);
    const started = Date.now();
    const reading = lease(ws, 'lease_ms=6000&poll_ms=10000&type=decision.expired');
    // The lease waits before the sweep can time the decision out, so only a wake-up can bring it.
    await reading.idle;
    const stop = startBackgroundJobs(app.runtime, { sweepMs: 100 });
    try {
      const { text } = await reading;
      const expired = framesOf(text).filter((f) => f.event === 'decision.expired');
      expect(expired).toHaveLength(1);
      expect(JSON.parse(expired[0]!.data!).aggregateId).toBe(raised.body.decision.id);
      // The lease lasted 6 s and would poll after 10 s: only the sweep's wake-up can deliver it.
      expect(Date.now() - started).toBeLessThan(9000);
    } finally {
      await stop();
    }
  });

  it('is served for the path in any case, as every other route is matched', async () => {
    const ws = await freshWorkspace();
    const res = await app.fetch(
      new Request('http://127.0.0.1:3000/api/v1/Events/Stream?format=sse&lease_ms=200', {
        headers: { authorization: `Bearer ${ws.apiKey}` },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(framesOf(await res.text()).pop()!.event).toBe('lease_end');
  });

  it('a reader that falls behind is written nothing more until it has caught up, then gets the rest from the ledger, once each and in order', async () => {
    const ws = await freshWorkspace();
    // The lease's own body, as the node server starts it, with a client that takes three chunks and is then behind.
    const handle = createRestHandler({ runtime: async () => app.runtime });
    const answer = await handle({
      method: 'GET',
      url: new URL('http://127.0.0.1/api/v1/events/stream?format=sse&lease_ms=60000'),
      headers: { get: (name) => (name.toLowerCase() === 'authorization' ? `Bearer ${ws.apiKey}` : null) },
      body: async () => Buffer.alloc(0),
    });
    expect(answer.status).toBe(200);
    const written: string[] = [];
    let room = 3;
    let caughtUp: (() => void) | null = null;
    answer.stream!.start({
      write: (chunk) => {
        written.push(new TextDecoder().decode(chunk));
        return --room > 0;
      },
      drained: (then) => void (caughtUp = then),
      end: () => undefined,
    });
    try {
      await until(() => caughtUp !== null, 3000);
      for (let i = 0; i < 10; i++) expect((await work(ws)).status).toBe(201);
      await new Promise((r) => setTimeout(r, 300));
      // Behind: nothing more was written, however much committed.
      expect(written).toHaveLength(3);

      room = Infinity;
      caughtUp!();
      await until(() => (written.join('').match(/event: work\.created/g) ?? []).length === 10, 3000);
      const sequences = framesOf(written.join(''))
        .filter((f) => f.data && f.id)
        .map((f) => (JSON.parse(f.data!) as { sequence: number }).sequence);
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => sequences[0]! + i));
      expect(sequences[0]).toBe(1);
    } finally {
      answer.stream!.cancel();
    }
  });

  it('idle leases cost no database query at all; a commit wakes every one of them', async () => {
    const counted = await countingApp();
    const ws = counted.app.ws;
    const leases: OpenLease[] = [];
    try {
      // poll_ms=20: a lease that polled would run ~50 queries a second.
      for (let i = 0; i < 20; i++) leases.push(openLease(counted.app.url, ws.apiKey, 'lease_ms=15000&poll_ms=20'));
      // Each has replayed and sent a keepalive (SSE_KEEPALIVE_MS=100): it is idle.
      await until(() => leases.every((l) => l.text().includes(': keepalive')), 5000);
      const before = counted.queries();
      await new Promise((r) => setTimeout(r, 1500));
      expect(counted.queries() - before).toBe(0);
      expect(leases.every((l) => (l.text().match(/: keepalive/g) ?? []).length >= 5)).toBe(true);

      expect((await counted.app.request('POST', '/work', { key: ws.apiKey, body: { title: 'wake all' } })).status).toBe(201);
      await until(() => leases.every((l) => l.text().includes('event: work.created')), 3000);
      // The counter does see queries: the write's, and one read for all twenty leases.
      expect(counted.queries() - before).toBeGreaterThan(0);
      // What follows the commit (on PostgreSQL its NOTIFY) may still be in flight: wait until quiet.
      let last = -1;
      await until(
        () => {
          const now = counted.queries();
          const quiet = now === last;
          last = now;
          return quiet;
        },
        5000,
        250,
      );
      const afterWake = counted.queries();
      await new Promise((r) => setTimeout(r, 1000));
      expect(counted.queries() - afterWake).toBe(0);
    } finally {
      for (const l of leases) l.abort();
      await counted.close();
    }
  });

  it('a real EventSource reading while writers append, dropped and resumed many times, sees every event once, in order', async () => {
    const ws = await freshWorkspace();
    const base = (await app.request('GET', '/ledger/verify', { key: ws.apiKey })).body.data.head.sequence as number;
    const total = 60;
    const received: { sequence: number; previousHash: string; eventHash: string; id: string }[] = [];
    let leaseEnds = 0;
    let drops = 0;
    let source: EventSource | null = null;
    const open = (lastEventId?: string) => {
      const url = `${app.url}/api/v1/events/stream?format=sse&lease_ms=150&poll_ms=20&type=work.created${
        lastEventId ? `&last_event_id=${encodeURIComponent(lastEventId)}` : ''
      }`;
      source = new EventSource(url, {
        fetch: (input, init) =>
          fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${ws.apiKey}` } }),
      });
      source.addEventListener('work.created', (e) => {
        const event = JSON.parse(e.data);
        received.push({ sequence: event.sequence, previousHash: event.previousHash, eventHash: event.eventHash, id: e.lastEventId });
      });
      source.addEventListener('lease_end', () => leaseEnds++);
    };
    open();
    const writers = (async () => {
      for (let i = 0; i < total; i++) {
        expect((await work(ws, `item ${i}`)).status).toBe(201);
        if (i % 15 === 7) {
          drops++;
          // The client drops the connection itself and resumes from the last id it saw.
          source!.close();
          await new Promise((r) => setTimeout(r, 30));
          open(received[received.length - 1]?.id);
        }
        if (i % 5 === 0) await new Promise((r) => setTimeout(r, 40));
      }
    })();
    await writers;
    const deadline = Date.now() + 20_000;
    while (received.length < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    source!.close();
    expect(received).toHaveLength(total);
    const seqs = received.map((r) => r.sequence);
    expect(new Set(seqs).size).toBe(total);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
    // Work events are every event after the workspace's first ones: no gap.
    expect(seqs).toEqual(Array.from({ length: total }, (_, i) => base + i + 1));
    // Resumed many times: four drops by the client, and every lease the server ended (EventSource
    // reconnects by itself, sending Last-Event-ID).
    expect(drops).toBe(4);
    expect(leaseEnds).toBeGreaterThanOrEqual(2);
  });
});

if (testEngine() === 'postgres') {
  describe('wake-ups across instances (PostgreSQL LISTEN/NOTIFY)', () => {
    it('while LISTEN is not known to be up, leases poll at poll_ms; once it is, they sleep again', async () => {
      const ws = await freshWorkspace();
      const wakeups = app.runtime.wakeups;
      expect(wakeups.healthy).toBe(true);
      const reading = lease(ws, 'lease_ms=2500&poll_ms=50&type=api_key.created');
      await reading.idle;
      wakeups.setListening(false);
      try {
        expect(wakeups.healthy).toBe(false);
        // A commit nobody signals (another instance's NOTIFY lost with the connection): only a poll finds it.
        await app.runtime.db.transaction((tx) => createApiKey(tx, systemActor(ws), { name: 'unsignalled' }));
        const polled = Date.now();
        const { text } = await reading;
        const frames = framesOf(text).filter((f) => f.event === 'api_key.created');
        // The workspace's own key, then the one made while LISTEN was down.
        expect(frames).toHaveLength(2);
        expect(Date.now() - polled).toBeLessThan(3000);
      } finally {
        wakeups.setListening(true);
      }
      expect(wakeups.healthy).toBe(true);
    });

    it('a dropped LISTEN connection is noticed and re-established, and wakes leases again', async () => {
      const ws = await freshWorkspace();
      const wakeups = app.runtime.wakeups;
      const changes: boolean[] = [];
      const unwatch = wakeups.onHealthChange((healthy) => changes.push(healthy));
      const admin = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
      try {
        const killed = await admin<{ pid: number }[]>`
          select pid from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and query ilike ${`listen "${WAKE_CHANNEL}"`}`;
        expect(killed.length).toBeGreaterThanOrEqual(1);
        for (const { pid } of killed) await admin`select pg_terminate_backend(${pid})`;
        await until(() => changes.length >= 2, 10_000);
        expect(changes.slice(0, 2)).toEqual([false, true]);
        expect(wakeups.healthy).toBe(true);

        // Listening again: another instance's commit (here: an unsignalled append, then its NOTIFY) wakes a lease.
        const reading = lease(ws, 'lease_ms=2500&poll_ms=10000&type=api_key.created');
        await reading.idle;
        await app.runtime.db.transaction((tx) => createApiKey(tx, systemActor(ws), { name: 'after the drop' }));
        const notified = Date.now();
        await admin`select pg_notify(${WAKE_CHANNEL}, ${ws.workspaceId})`;
        const { text } = await reading;
        expect(framesOf(text).filter((f) => f.event === 'api_key.created')).toHaveLength(2);
        expect(Date.now() - notified).toBeLessThan(2500);
      } finally {
        unwatch();
        await admin.end();
      }
    });

    it('this instance ignores its own NOTIFY: a commit wakes its feed once, not again when the NOTIFY comes back', async () => {
      const ws = await freshWorkspace();
      let wakes = 0;
      const unsubscribe = app.runtime.wakeups.subscribe(ws.workspaceId, () => wakes++);
      const admin = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
      const heard: string[] = [];
      await admin.listen(WAKE_CHANNEL, (payload) => heard.push(payload));
      try {
        expect((await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'wake once' } })).status).toBe(201);
        // The NOTIFY went out (another listener heard it, naming this instance) ...
        await until(() => heard.some((p) => p.startsWith(ws.workspaceId)), 5000);
        expect(heard.filter((p) => p.startsWith(ws.workspaceId))).toEqual([`${ws.workspaceId} ${app.runtime.wakeups.origin}`]);
        // ... and came back to this instance's LISTEN too, where it woke nothing (nothing to wait
        // for: a wake that should not happen is watched for, for as long as the NOTIFY takes to return).
        await new Promise((r) => setTimeout(r, 500));
        expect(wakes).toBe(1);
      } finally {
        unsubscribe();
        await admin.end();
      }
    });

    it('a commit by another instance wakes this one’s lease', async () => {
      const other = await createRuntime(parseEnv({ NODE_ENV: 'test', DATABASE_URL: app.runtime.databaseUrl!, SEED_DEMO: 'false' }));
      const otherServer = await serveApi(other);
      try {
        const ws = await freshWorkspace();
        const started = Date.now();
        const reading = lease(ws, 'lease_ms=2500&poll_ms=10000&type=work.created');
        await reading.idle;
        const res = await otherServer.fetch(
          new Request('http://127.0.0.1:3000/api/v1/work', {
            method: 'POST',
            headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ title: 'from the other instance' }),
          }),
        );
        expect(res.status).toBe(201);
        const { text } = await reading;
        expect(framesOf(text).filter((f) => f.event === 'work.created')).toHaveLength(1);
        expect(Date.now() - started).toBeLessThan(4000);
      } finally {
        await otherServer.close();
        await other.close();
      }
    });
  });
}

async function until(condition: () => boolean, timeoutMs: number, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

interface OpenLease {
  /** Everything received so far. */
  text(): string;
  abort(): void;
}

/** Opens a lease over HTTP and keeps reading it in the background. */
function openLease(baseUrl: string, apiKey: string, query: string): OpenLease {
  const controller = new AbortController();
  let received = '';
  void (async () => {
    const res = await fetch(`${baseUrl}/api/v1/events/stream?format=sse&${query}`, {
      headers: { authorization: `Bearer ${apiKey}` },
      signal: controller.signal,
    });
    const decoder = new TextDecoder();
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += decoder.decode(value, { stream: true });
    }
  })().catch(() => undefined);
  return { text: () => received, abort: () => controller.abort() };
}

/**
 * A test app of its own whose every database query is counted below the driver: on PGlite at the
 * instance's protocol entry point (every query, transaction and COPY goes through
 * execProtocolRawSync), on PostgreSQL on the wire, through a proxy that counts the frontend
 * protocol messages of every connection (the pool's and LISTEN's).
 */
async function countingApp(): Promise<{ app: TestApp; queries(): number; close(): Promise<void> }> {
  const env = { SSE_KEEPALIVE_MS: '100' };
  if (testEngine() === 'pglite') {
    const counted = await startTestApp(env);
    const client = (counted.runtime.db as unknown as { $client: { execProtocolRawSync(message: Uint8Array): Uint8Array } }).$client;
    const original = client.execProtocolRawSync.bind(client);
    let n = 0;
    client.execProtocolRawSync = (message: Uint8Array) => {
      n++;
      return original(message);
    };
    return { app: counted, queries: () => n, close: () => counted.close() };
  }
  const proxy = await countingProxy();
  const counted = await startTestApp(env, { via: proxy.via });
  return {
    app: counted,
    queries: proxy.messages,
    async close() {
      await counted.close();
      await proxy.close();
    },
  };
}

/** A TCP proxy to PostgreSQL counting the protocol messages clients send (Terminate aside). */
async function countingProxy(): Promise<{ via(url: string): string; messages(): number; close(): Promise<void> }> {
  let messages = 0;
  const proxy = await startDbProxy({
    onClient(client) {
      let pending = Buffer.alloc(0);
      let started = false;
      client.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        for (;;) {
          if (!started) {
            // Untyped startup packets: SSLRequest / GSSENCRequest, then StartupMessage.
            if (pending.length < 8 || pending.length < pending.readInt32BE(0)) break;
            const code = pending.readInt32BE(4);
            pending = pending.subarray(pending.readInt32BE(0));
            if (code !== 80877103 && code !== 80877104) started = true;
            continue;
          }
          if (pending.length < 5 || pending.length < 1 + pending.readInt32BE(1)) break;
          if (pending[0] !== 0x58) messages++;
          pending = pending.subarray(1 + pending.readInt32BE(1));
        }
      });
    },
  });
  return { via: (url) => proxy.via(url), messages: () => messages, close: () => proxy.close() };
}

describe('GET /events/stream?format=sse with the session cookie (the web interface’s live pages)', () => {
  const sse = async (query: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${app.url}/api/v1/events/stream?format=sse&${query}`, { headers });
    return { status: res.status, text: await res.text() };
  };
  const cookie = (session: string) => ({ cookie: `next-auth.session-token=${session}` });

  it('serves a member their workspace’s events as they commit, from the cursor the page was drawn at', async () => {
    const ws = await freshWorkspace();
    const member = await app.member('viewer', ws.workspaceId);
    const head = (await app.request('GET', '/events/stream?limit=100', { key: ws.apiKey })).body.meta.nextCursor;
    const reading = sse(`workspace_id=${ws.workspaceId}&lease_ms=1500&cursor=${encodeURIComponent(head)}`, cookie(member.session));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await work(ws)).status).toBe(201);
    const { status, text } = await reading;
    expect(status).toBe(200);
    const frames = framesOf(text);
    expect(frames.filter((f) => f.data && f.event !== 'lease_end').map((f) => f.event)).toEqual(['work.created']);
    expect(frames.at(-1)!.event).toBe('lease_end');
  });

  it('refuses another workspace (403), no credential or an expired session (401), and a key naming another workspace (403)', async () => {
    const ws = await freshWorkspace();
    const other = await freshWorkspace();
    const member = await app.member('approver', ws.workspaceId);
    const outsider = await sse(`workspace_id=${other.workspaceId}&lease_ms=10`, cookie(member.session));
    expect(outsider.status).toBe(403);
    expect(JSON.parse(outsider.text).error.code).toBe('forbidden');
    expect((await sse('lease_ms=10')).status).toBe(401);
    expect((await sse('lease_ms=10', cookie('not-a-session'))).status).toBe(401);
    const foreignKey = await sse(`workspace_id=${other.workspaceId}&lease_ms=10`, { authorization: `Bearer ${ws.apiKey}` });
    expect(foreignKey.status).toBe(403);
    const ownKey = await sse(`workspace_id=${ws.workspaceId}&lease_ms=10`, { authorization: `Bearer ${ws.apiKey}` });
    expect(ownKey.status).toBe(200);
  });

  it('ends a human’s lease when they are removed from the workspace', async () => {
    const ws = await freshWorkspace();
    const owner = await app.member('owner', ws.workspaceId);
    const member = await app.member('viewer', ws.workspaceId);
    const started = Date.now();
    const reading = sse(`workspace_id=${ws.workspaceId}&lease_ms=20000`, cookie(member.session));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const trpc = createInternalTrpcHandler(async () => app.runtime);
    const removed = await trpc(
      new Request('http://127.0.0.1:3000/api/trpc/members.remove', {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:3000', ...cookie(owner.session) },
        body: JSON.stringify({ workspace_id: ws.workspaceId, user_id: member.userId }),
      }),
    );
    expect(removed.status).toBe(200);
    const { status } = await reading;
    expect(status).toBe(200);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
