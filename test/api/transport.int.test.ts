/** The transport: request ids, the error envelope, body rules, credentials and the error docs. */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { revokeApiKey } from '@/server/domain/api-keys/api-keys';
import { systemTrace } from '@/server/domain/actor';
import { createRestHandler } from '@/server/api/rest';
import { errorCodes, errorTable } from '@/server/errors';
import { fetchApiHandler } from '@/server/http/fetch-api';
import { startTestApp, type TestApp } from '../support/app';
import { startDbProxy } from '../support/db-proxy';
import { testEngine } from '../support/engine';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

function expectEnvelope(res: { status: number; headers: Headers; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body.error).toMatchObject({
    code,
    requestId: res.headers.get('x-request-id'),
    docsUrl: `http://localhost:3000/api/v1/errors?code=${code}`,
    details: expect.any(Object),
  });
  expect(res.body.error.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  expect(typeof res.body.error.message).toBe('string');
  expect(Number.isInteger(res.body.error.retryAfter)).toBe(true);
}

describe('request ids', () => {
  it('every response carries a fresh X-Request-Id', async () => {
    const a = await app.request('GET', '/errors');
    const b = await app.request('GET', '/errors');
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });
});

describe('bodies', () => {
  it('invalid JSON is 400 invalid_json', async () => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/work', { rawBody: '{"title": ', headers: { 'content-type': 'application/json' } });
      expectEnvelope(res, 400, 'invalid_json');
    });
  });

  it('JSON that is not an object is 400 invalid_json', async () => {
    for (const raw of ['[{"title":"x"}]', '"x"', 'null', '42']) {
      const res = await app.request('POST', '/work', { rawBody: raw, headers: { 'content-type': 'application/json' } });
      expectEnvelope(res, 400, 'invalid_json');
    }
  });

  it('bytes that are not UTF-8 are 400 invalid_json', async () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0x74, 0x69, 0x74, 0x6c, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    const res = await app.request('POST', '/work', { rawBody: bytes, headers: { 'content-type': 'application/json' } });
    expectEnvelope(res, 400, 'invalid_json');
  });

  it('a body that is not application/json is 415', async () => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/work', {
        rawBody: 'title=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expectEnvelope(res, 415, 'unsupported_media_type');
      const none = await app.request('POST', '/work', { rawBody: '{"title":"x"}' });
      expect(none.status).toBe(415);
    });
  });

  it('application/json with a charset is accepted', async () => {
    const res = await app.request('POST', '/work', {
      rawBody: '{"title":"charset"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(201);
  });

  it('an empty body counts as {} (so here: title is missing)', async () => {
    const res = await app.request('POST', '/work', { rawBody: '' });
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.details.issues[0].path).toBe('title');
  });

  it('a body over 1 MiB is 413, by Content-Length or while streaming', async () => {
    const big = JSON.stringify({ title: 't', description: 'x'.repeat(1024 * 1024) });
    await app.expectUnchanged(async () => {
      const declared = await app.request('POST', '/work', { rawBody: big, headers: { 'content-type': 'application/json' } });
      expectEnvelope(declared, 413, 'payload_too_large');

      const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0) controller.enqueue(new TextEncoder().encode('{"title":"t","description":"'));
          if (sent > 20) controller.close();
          else controller.enqueue(chunk);
          sent++;
        },
      });
      const chunked = await app.request('POST', '/work', { rawBody: stream, headers: { 'content-type': 'application/json' } });
      expectEnvelope(chunked, 413, 'payload_too_large');
    });
  });

  it('under the dev route an event-stream lease is a web stream: its frames as they come, and cancelling it ends the lease', async () => {
    const handle = fetchApiHandler(createRestHandler({ runtime: async () => app.runtime }));
    const res = await handle(
      new Request('http://127.0.0.1:3000/api/v1/events/stream?format=sse&lease_ms=60000', {
        headers: { authorization: `Bearer ${app.ws.apiKey}` },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: workspace.created')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toMatch(/^retry: \d+\n\n/);
    // The client leaves: the lease ends at once (its place among the key's leases is free again).
    await reader.cancel();
    const again = await handle(
      new Request('http://127.0.0.1:3000/api/v1/events/stream?format=sse&lease_ms=1', {
        headers: { authorization: `Bearer ${app.ws.apiKey}` },
      }),
    );
    expect((await again.text()).trimEnd()).toMatch(/event: lease_end\ndata: \{"nextCursor":"[^"]+"\}$/);
  });

  it('a body cut off by the client (its connection reset) is a 400 of the request, not a 503 of the database', async () => {
    // Over a socket nobody is left to read this answer (test/api/node-adapter.int.test.ts sends one
    // and checks the server goes on): the transport is given a body that fails mid-read, as the
    // socket's does, through the dev route's view of a Request.
    const handle = fetchApiHandler(createRestHandler({ runtime: async () => app.runtime }));
    await app.expectUnchanged(async () => {
      let sent = false;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (!sent) {
            sent = true;
            controller.enqueue(new TextEncoder().encode('{"title":"cut'));
          } else controller.error(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
        },
      });
      const res = await handle(
        new Request('http://127.0.0.1:3000/api/v1/work', {
          method: 'POST',
          headers: { authorization: `Bearer ${app.ws.apiKey}`, 'content-type': 'application/json' },
          body: stream,
          duplex: 'half',
        } as RequestInit),
      );
      const body = (await res.json()) as any;
      expectEnvelope({ status: res.status, headers: res.headers, body }, 400, 'invalid_json');
      expect(body.error.message).toBe('The request body was cut off before its end.');
    });
  });

  it('a body just under the limit is read (and judged by the field rules)', async () => {
    const body = JSON.stringify({ title: 't', description: 'x'.repeat(1024 * 1024 - 100) });
    const res = await app.request('POST', '/work', { rawBody: body, headers: { 'content-type': 'application/json' } });
    expectEnvelope(res, 400, 'validation_failed');
  });
});

describe('what is checked before the credential', () => {
  it('the body’s form (JSON, size, media type) is checked first; the field rules only after authentication', async () => {
    const malformed = await app.request('POST', '/work', { key: null, rawBody: '{', headers: { 'content-type': 'application/json' } });
    expectEnvelope(malformed, 400, 'invalid_json');
    const wellFormed = await app.request('POST', '/work', { key: null, body: { title: '' } });
    expectEnvelope(wellFormed, 401, 'unauthorized');
  });
});

describe('routes', () => {
  it('query parameters on an operation with a body are 400 unknown_field', async () => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/work?title=x&dry_run=1', { body: { title: 'x' } });
      expectEnvelope(res, 400, 'unknown_field');
      expect(res.body.error.details.fields).toEqual(['query.title', 'query.dry_run']);
    });
  });

  it('HEAD answers like GET without a body', async () => {
    const ok = await app.request('HEAD', '/events/stream');
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('');
    expect((await app.request('HEAD', '/events/stream', { key: null })).status).toBe(401);
    expect((await app.request('HEAD', '/nowhere')).status).toBe(404);
  });

  it('an unknown route is 404 not_found in the envelope', async () => {
    const res = await app.request('GET', '/no-such-thing');
    expectEnvelope(res, 404, 'not_found');
    const wrongMethod = await app.request('DELETE', '/work');
    expectEnvelope(wrongMethod, 404, 'not_found');
  });

  it('unknown query parameters are 400 unknown_field', async () => {
    const res = await app.request('GET', '/events/stream?colour=blue');
    expectEnvelope(res, 400, 'unknown_field');
    expect(res.body.error.details.fields).toEqual(['query.colour']);
    // Every place names a query parameter the same way (docs/contract.md §10.8).
    const proto = await app.request('GET', '/runs?__proto__=1');
    expect(proto.body.error.details.fields).toEqual(['query.__proto__']);
    const limit = await app.request('GET', '/runs?limit=0');
    expectEnvelope(limit, 400, 'validation_failed');
    expect(limit.body.error.details.issues[0].path).toBe('query.limit');
  });
});

describe('credentials', () => {
  it('no credential is 401 unauthorized with a Bearer challenge', async () => {
    const res = await app.request('POST', '/work', { key: null, body: { title: 'x' } });
    expectEnvelope(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toContain('Bearer');
  });

  it('an unknown or malformed key is 401 and writes nothing', async () => {
    await app.expectUnchanged(async () => {
      for (const key of [`awk_${'A'.repeat(43)}`, 'not-a-key', '']) {
        const res = await app.request('POST', '/work', { key, body: { title: 'x' } });
        expectEnvelope(res, 401, 'unauthorized');
      }
      const basic = await app.request('GET', '/events/stream', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
      expectEnvelope(basic, 401, 'unauthorized');
    });
  });

  it('authentication comes before input rules: no credential and a bad body is still 401', async () => {
    const res = await app.request('POST', '/work', { key: null, body: { nope: true } });
    expectEnvelope(res, 401, 'unauthorized');
  });

  it('a revoked key is refused at once', async () => {
    const ws = await app.createWorkspace();
    const ok = await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'before' } });
    expect(ok.status).toBe(201);
    await app.runtime.db.transaction((tx) =>
      revokeApiKey(
        tx,
        { type: 'system', id: 'system:test', ownerId: ws.ownerUserId, workspaceId: ws.workspaceId, trace: systemTrace(randomUUID()) },
        { keyId: ws.apiKeyId },
      ),
    );
    const refused = await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'after' } });
    expectEnvelope(refused, 401, 'unauthorized');
  });

  it('keeps last_used_at', async () => {
    const ws = await app.createWorkspace();
    await app.request('GET', '/events/stream', { key: ws.apiKey });
    const { apiKeys } = await import('@/db/schema');
    const { eq } = await import('drizzle-orm');
    const [row] = await app.runtime.db.select().from(apiKeys).where(eq(apiKeys.id, ws.apiKeyId));
    expect(row?.lastUsedAt).toBeInstanceOf(Date);
    expect(row!.secretHash).not.toContain(ws.apiKey.slice(4));
  });

  it('trace headers are validated', async () => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/work', { body: { title: 'x' }, headers: { 'x-correlation-id': 'nope' } });
      expectEnvelope(res, 400, 'validation_failed');
      const manifest = await app.request('POST', '/work', { body: { title: 'x' }, headers: { 'x-context-manifest-digest': 'md5:1' } });
      expectEnvelope(manifest, 400, 'validation_failed');
    });
  });
});

describe('GET /errors', () => {
  it('documents every code of the table, without a credential', async () => {
    const res = await app.request('GET', '/errors', { key: null });
    expect(res.status).toBe(200);
    expect(res.body.data.map((d: { code: string }) => d.code)).toEqual(errorCodes);
    for (const doc of res.body.data) expect(doc.status).toBe(errorTable[doc.code as keyof typeof errorTable].status);
  });

  it('documents one code', async () => {
    const res = await app.request('GET', '/errors?code=idempotency_conflict', { key: null });
    expect(res.body.data).toEqual([expect.objectContaining({ code: 'idempotency_conflict', status: 422 })]);
  });

  it('an unknown code is 404', async () => {
    const res = await app.request('GET', '/errors?code=nope', { key: null });
    expectEnvelope(res, 404, 'not_found');
  });
});

describe('when the database is gone', () => {
  it('answers in the envelope without internals (503 on PostgreSQL, 500 on a closed PGlite)', async () => {
    const lone = await startTestApp();
    await lone.runtime.close();
    const res = await lone.request('POST', '/work', { body: { title: 'x' } });
    expect([500, 503]).toContain(res.status);
    expect(res.body.error.code).toBe(res.status === 503 ? 'service_unavailable' : 'internal_error');
    expect(res.text).not.toMatch(/at .*\.(ts|js):\d+|PGlite|postgres|select |insert /i);
    if (res.status === 503) expect(res.headers.get('retry-after')).toBe('1');
  });
});

describe('transactions', () => {
  it('a failure caught inside a transaction still fails it: nothing is committed, and the caller hears so', async () => {
    await app.expectUnchanged(async () => {
      await expect(
        app.runtime.db.transaction(async (tx) => {
          await tx.execute(sql`insert into instance_secrets (name, value) values ('swallowed', 'x')`);
          await tx.execute(sql`select 1 / 0`).catch(() => undefined);
        }),
      ).rejects.toThrow();
    });
    const rows = await query(app.runtime.db, sql`select 1 from instance_secrets where name = 'swallowed'`);
    expect(rows).toHaveLength(0);
  });
});

/**
 * Reads what a client sends PostgreSQL (its frontend messages) from the chunks of one connection:
 * each simple query (Q) with its text, each Parse (P) with its statement's name and text, each Bind
 * (B) with the statement it runs. The first message of a connection (startup) has no type byte.
 */
function frontendReader(): (chunk: Buffer) => { type: string; name: string; text: string }[] {
  let pending = Buffer.alloc(0);
  let started = false;
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    const out: { type: string; name: string; text: string }[] = [];
    for (;;) {
      if (!started) {
        if (pending.length < 4 || pending.length < pending.readInt32BE(0)) break;
        pending = pending.subarray(pending.readInt32BE(0));
        started = true;
        continue;
      }
      if (pending.length < 5 || pending.length < pending.readInt32BE(1) + 1) break;
      const type = String.fromCharCode(pending[0]!);
      const body = pending.subarray(5, pending.readInt32BE(1) + 1);
      pending = pending.subarray(body.length + 5);
      const strings = body.toString('utf8').split('\0');
      if (type === 'Q') out.push({ type, name: '', text: strings[0]! });
      if (type === 'P') out.push({ type, name: strings[0]!, text: strings[1]! });
      if (type === 'B') out.push({ type, name: strings[1]!, text: '' });
    }
    return out;
  };
}

if (testEngine() === 'postgres') {
  describe('statements on PostgreSQL', () => {
    it('POST /work waits for the database three times: auth, then BEGIN + claim + insert, then append + store + COMMIT', async () => {
      // The proxy holds each answer 25 ms: a write the app makes before the answer to its previous
      // write has reached it was sent without waiting, in the same flight. Each flight is read as
      // the statements it runs (a prepared statement's Bind names the text its Parse gave), so the
      // test sees that the ledger append goes out with COMMIT: the workspace's append lock is held
      // for no round trip to the app. The wake-up NOTIFY after a commit is not counted.
      let flights: string[][] = [];
      let answered = true;
      let counting = false;
      const named = new Map<string, string>();
      const proxy = await startDbProxy({
        answerDelayMs: 25,
        onAnswer: () => (answered = true),
        onClient: (client) => {
          const reader = frontendReader();
          client.on('data', (chunk: Buffer) => {
            for (const m of reader(chunk)) {
              if (m.type === 'P') named.set(m.name, m.text);
              if (!counting) continue;
              const statement = m.type === 'Q' ? m.text : m.type === 'B' ? (named.get(m.name) ?? `unknown ${m.name}`) : null;
              if (statement === null || statement.includes('pg_notify(')) continue;
              if (answered) flights.push([]);
              answered = false;
              flights.at(-1)!.push(statement);
            }
          });
        },
      });
      const single = await startTestApp({ DB_POOL_MAX: '1' }, { via: proxy.via });
      const shown = () =>
        flights.map((f) =>
          f.map((text) => {
            const kinds: [string, string][] = [
              ['rate_limit_counters', 'auth'],
              ['ledger_append', 'append'],
              ['fill_stand_ins', 'store'],
              ['"inserted_task"', 'insert'],
              ['insert into "idempotency_records"', 'claim'],
              ['select "fingerprint"', 'stored response'],
            ];
            return kinds.find(([part]) => text.includes(part))?.[1] ?? text.trim().toLowerCase();
          }),
        );
      try {
        // Warm: the statements are prepared (a replay's too), the key's last-used time written.
        const warmKey = randomUUID();
        for (const status of [201, 200]) {
          expect((await single.request('POST', '/work', { body: { title: 'warm' }, headers: { 'idempotency-key': warmKey } })).status).toBe(
            status,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
        counting = true;
        const res = await single.request('POST', '/work', { body: { title: 'counted' }, headers: { 'idempotency-key': randomUUID() } });
        counting = false;
        expect(res.status).toBe(201);
        expect(shown()).toEqual([['auth'], ['begin', 'claim', 'insert'], ['append', 'store', 'commit']]);
        // A replay: auth, then the claim (refused) with the statements behind it, ROLLBACK, and the
        // stored response read (prepared by the warm-up's replay).
        const key = randomUUID();
        expect((await single.request('POST', '/work', { body: { title: 'once' }, headers: { 'idempotency-key': key } })).status).toBe(201);
        flights = [];
        counting = true;
        const again = await single.request('POST', '/work', { body: { title: 'once' }, headers: { 'idempotency-key': key } });
        counting = false;
        expect(again.status).toBe(200);
        expect(shown()).toEqual([['auth'], ['begin', 'claim', 'insert'], ['rollback'], ['stored response']]);
      } finally {
        await single.close();
        await proxy.close();
      }
    });

    it('are prepared once per connection and reused: the append path’s statements are listed as prepared', async () => {
      // One connection, so the statements a request prepared are those this session lists.
      const single = await startTestApp({ DB_POOL_MAX: '1' });
      try {
        for (const title of ['first', 'second']) {
          const res = await single.request('POST', '/work', { body: { title }, headers: { 'idempotency-key': randomUUID() } });
          expect(res.status).toBe(201);
        }
        const rows = await query<{ statement: string }>(single.runtime.db, sql`select statement from pg_prepared_statements`);
        const texts = rows.map((r) => r.statement);
        for (const part of ['ledger_append', 'insert into "idempotency_records"', 'fill_stand_ins(', 'rate_limit_counters']) {
          // Exactly one prepared statement each, though two requests ran them.
          expect(
            texts.filter((t) => t.includes(part)),
            part,
          ).toHaveLength(1);
        }
      } finally {
        await single.close();
      }
    });
  });
}
