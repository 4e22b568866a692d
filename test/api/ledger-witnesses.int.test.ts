/**
 * Named witnesses over REST (POST/GET/DELETE /ledger/witnesses) and what naming changes for
 * POST /ledger/cosignatures: only a named witness's cosignature is kept and served with the
 * checkpoint, one per witness and tree size (the newest), with a time no later than 10 minutes
 * ahead; naming and removing are ledger events, the chain verifies, and the table is the ledger
 * replayed (projections:rebuild leaves it as it was).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { rebuildProjections, replayWorkspace } from '@/server/projections/rebuild';
import { loadFromTables } from '@/server/projections/state';
import { COSIGNATURE_ED25519, cosignatureLine, generateNoteKey, parseNote, vkeyOf, type NoteKey } from '@/server/ledger/note';
import { startTestApp, type TestApp, type TestMember, type TestWorkspace } from '../support/app';
import { integrate, nameWitness, writeWork } from '../support/ledger-tree';

let app: TestApp;
let viewer: TestMember;
let approver: TestMember;
let owner: TestMember;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
  [viewer, approver, owner] = await Promise.all([app.member('viewer'), app.member('approver'), app.member('owner')]);
});
afterAll(async () => app?.close());

const witnessKey = (name = `witness.example/${Math.random().toString(36).slice(2, 8)}`) => generateNoteKey(name, COSIGNATURE_ED25519);
const now = () => Math.floor(Date.now() / 1000);

/** A workspace with a signed checkpoint: its note and text. */
async function signedWorkspace(): Promise<{ ws: TestWorkspace; note: string; text: string; size: number }> {
  const ws = await app.createWorkspace();
  await writeWork(app, ws, 3);
  await integrate(app, ws);
  const cp = (await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.data;
  return { ws, note: cp.note, text: parseNote(cp.note).text, size: cp.tree_size };
}

function cosign(ws: TestWorkspace, note: string, text: string, key: NoteKey, time = now()) {
  return app.request('POST', '/ledger/cosignatures', {
    key: ws.apiKey,
    body: { note: note + cosignatureLine(text, key, time), witness_vkey: vkeyOf(key) },
  });
}

const served = async (ws: TestWorkspace) => (await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.data;

async function cosignatureRows(ws: TestWorkspace) {
  return query(app.runtime.db, sql`select * from ledger_cosignatures where workspace_id = ${ws.workspaceId} order by witness, tree_size`);
}

describe('named witnesses', () => {
  it('an owner’s key names a witness (201, listed, witness.named in the ledger); the same key twice is 409', async () => {
    const ws = await app.createWorkspace();
    const key = witnessKey();
    const named = await app.request('POST', '/ledger/witnesses', { key: ws.apiKey, body: { vkey: vkeyOf(key), name: key.name } });
    expect(named.status, named.text).toBe(201);
    expect(named.body.data).toEqual({
      id: expect.any(String),
      name: key.name,
      key_id: vkeyOf(key).split('+')[1],
      vkey: vkeyOf(key),
      named_at: expect.stringMatching(/Z$/),
    });
    const list = await app.request('GET', '/ledger/witnesses', { key: ws.apiKey });
    expect(list.body.data).toEqual([named.body.data]);
    await app.expectUnchanged(async () => {
      const again = await app.request('POST', '/ledger/witnesses', { key: ws.apiKey, body: { vkey: vkeyOf(key) } });
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({ code: 'conflict', details: { id: named.body.data.id } });
    });
    const events = await app.request('GET', '/events/stream?type=witness.named&type=witness.removed&limit=10', { key: ws.apiKey });
    expect(events.body.data.map((e: { eventType: string; payload: unknown }) => [e.eventType, e.payload])).toEqual([
      ['witness.named', { id: named.body.data.id, name: key.name, key_id: named.body.data.key_id, vkey: vkeyOf(key) }],
    ]);
    const removed = await app.request('DELETE', `/ledger/witnesses/${named.body.data.id}`, { key: ws.apiKey });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body.data).toEqual({ id: named.body.data.id, removed: true });
    expect((await app.request('GET', '/ledger/witnesses', { key: ws.apiKey })).body.data).toEqual([]);
    expect((await app.request('DELETE', `/ledger/witnesses/${named.body.data.id}`, { key: ws.apiKey })).status).toBe(404);
    const after = await app.request('GET', '/events/stream?type=witness.named&type=witness.removed&limit=10', { key: ws.apiKey });
    expect(after.body.data.map((e: { eventType: string }) => e.eventType)).toEqual(['witness.named', 'witness.removed']);
    expect(after.body.data[1]).toMatchObject({ actorType: 'api_key', payload: { id: named.body.data.id, name: key.name } });
    const verified = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
    expect(verified.body.data.ok, verified.text).toBe(true);
  });

  it('refuses what is not a witness key, names over 128 characters and a name that is not the key’s (400, nothing written)', async () => {
    const logKey = generateNoteKey('log.example/ws', 0x01);
    const long = witnessKey(`w${'x'.repeat(128)}`);
    const exact = witnessKey(`w${'x'.repeat(127)}`);
    const cases: [Record<string, unknown>, string][] = [
      [{ vkey: vkeyOf(logKey) }, 'vkey'],
      [{ vkey: vkeyOf(long) }, 'vkey'],
      [{ vkey: 'sigsum.org/v1/witness/impersonated+00000000+AAAA' }, 'vkey'],
      [{ vkey: vkeyOf(witnessKey('a')), name: 'b' }, 'name'],
      [{ vkey: '' }, 'vkey'],
    ];
    await app.expectUnchanged(async () => {
      for (const [body, field] of cases) {
        const res = await app.request('POST', '/ledger/witnesses', { body });
        expect(res.status, res.text).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
        expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toContain(field);
      }
    });
    const ok = await app.request('POST', '/ledger/witnesses', { body: { vkey: vkeyOf(exact) } });
    expect(ok.status, ok.text).toBe(201);
    expect((await app.request('DELETE', `/ledger/witnesses/${ok.body.data.id}`)).status).toBe(200);
  });

  it('viewers and approvers cannot name or remove a witness (403), another workspace’s key cannot either; members read the list', async () => {
    const key = witnessKey();
    const id = await nameWitness(app, app.ws, vkeyOf(key));
    const other = await app.createWorkspace();
    await app.expectUnchanged(async () => {
      for (const who of [viewer, approver]) {
        const post = await app.request('POST', '/ledger/witnesses', { session: who.session, body: { vkey: vkeyOf(witnessKey()) } });
        expect(post.status, post.text).toBe(403);
        expect(post.body.error.code).toBe('forbidden');
        const del = await app.request('DELETE', `/ledger/witnesses/${id}`, { session: who.session });
        expect(del.status, del.text).toBe(403);
        const list = await app.request('GET', '/ledger/witnesses', { session: who.session });
        expect(list.status).toBe(200);
        expect(list.body.data.map((w: { id: string }) => w.id)).toContain(id);
      }
      const foreign = await app.request('POST', '/ledger/witnesses', {
        key: other.apiKey,
        body: { workspace_id: app.ws.workspaceId, vkey: vkeyOf(witnessKey()) },
      });
      expect(foreign.status).toBe(403);
      const theirs = await app.request('DELETE', `/ledger/witnesses/${id}`, { key: other.apiKey });
      expect(theirs.status).toBe(404);
      expect(theirs.body.error.code).toBe('not_found');
    });
    // An owner signed in may.
    const byOwner = await app.request('DELETE', `/ledger/witnesses/${id}`, { session: owner.session });
    expect(byOwner.status, byOwner.text).toBe(200);
  });
});

describe('cosignatures from named witnesses only', () => {
  it('refuses an unnamed witness (403 witness_not_named, nothing kept) and keeps a named one’s, served with the checkpoint', async () => {
    const { ws, note, text } = await signedWorkspace();
    const key = witnessKey('sigsum.org/v1/witness/impersonated');
    await app.expectUnchanged(async () => {
      const res = await cosign(ws, note, text, key, 0);
      expect(res.status, res.text).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'witness_not_named', details: { witness: key.name, vkey: vkeyOf(key) } });
      expect(res.body.error.message).toContain('POST /ledger/witnesses');
    });
    expect((await served(ws)).cosignatures).toEqual([]);
    await nameWitness(app, ws, vkeyOf(key));
    const kept = await cosign(ws, note, text, key);
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.data.recorded).toBe(true);
    expect((await served(ws)).cosignatures).toEqual([expect.objectContaining({ witness: key.name, vkey: vkeyOf(key) })]);
  });

  it('keeps one cosignature per witness and tree size, the newest it signed', async () => {
    const { ws, note, text, size } = await signedWorkspace();
    const key = witnessKey();
    await nameWitness(app, ws, vkeyOf(key));
    const t = now() - 100;
    expect((await cosign(ws, note, text, key, t)).body.data.recorded).toBe(true);
    const newer = await cosign(ws, note, text, key, t + 50);
    expect(newer.body.data).toMatchObject({ recorded: true, signed_at: new Date((t + 50) * 1000).toISOString() });
    // An older line sent again (it was served, anyone can copy it) changes nothing.
    const older = await cosign(ws, note, text, key, t);
    expect(older.status).toBe(200);
    expect(older.body.data.recorded).toBe(false);
    const rows = await cosignatureRows(ws);
    expect(rows).toHaveLength(1);
    const checkpoint = await served(ws);
    expect(checkpoint.tree_size).toBe(size);
    expect(checkpoint.note).toBe(note + cosignatureLine(text, key, t + 50));
    expect(checkpoint.cosignatures).toEqual([expect.objectContaining({ signed_at: new Date((t + 50) * 1000).toISOString() })]);
  });

  it('a time more than 10 minutes ahead, or past any date, is 400 and keeps nothing; 5 minutes ahead is kept', async () => {
    const { ws, note, text } = await signedWorkspace();
    const key = witnessKey();
    await nameWitness(app, ws, vkeyOf(key));
    await app.expectUnchanged(async () => {
      for (const time of [now() + 11 * 60, 9_007_199_254_740_991, 8_640_000_000_001]) {
        const res = await cosign(ws, note, text, key, time);
        expect(res.status, `${time}: ${res.text}`).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
        expect(res.body.error.details.issues[0].path).toBe('note');
      }
    });
    const soon = await cosign(ws, note, text, key, now() + 5 * 60);
    expect(soon.status, soon.text).toBe(200);
  });

  it('a removed witness’s cosignatures are no longer served, and new ones are refused', async () => {
    const { ws, note, text } = await signedWorkspace();
    const [kept, removed] = [witnessKey(), witnessKey()];
    await nameWitness(app, ws, vkeyOf(kept));
    const id = await nameWitness(app, ws, vkeyOf(removed));
    expect((await cosign(ws, note, text, kept)).status).toBe(200);
    expect((await cosign(ws, note, text, removed)).status).toBe(200);
    expect((await served(ws)).cosignatures).toHaveLength(2);
    expect((await app.request('DELETE', `/ledger/witnesses/${id}`, { key: ws.apiKey })).status).toBe(200);
    const checkpoint = await served(ws);
    expect(checkpoint.cosignatures.map((c: { witness: string }) => c.witness)).toEqual([kept.name]);
    expect(checkpoint.note).not.toContain(removed.name);
    const refused = await cosign(ws, note, text, removed);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('witness_not_named');
    // Naming and removing are events of the chain, which still verifies.
    const verified = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
    expect(verified.body.data.ok).toBe(true);
  });

  it('the named witnesses are the ledger replayed: projections:rebuild leaves the table as it was', async () => {
    const ws = await app.createWorkspace();
    const keys = [witnessKey(), witnessKey(), witnessKey()];
    const ids = [];
    for (const key of keys) ids.push(await nameWitness(app, ws, vkeyOf(key)));
    expect((await app.request('DELETE', `/ledger/witnesses/${ids[1]}`, { key: ws.apiKey })).status).toBe(200);
    const before = await loadFromTables(app.runtime.db, ws.workspaceId);
    expect([...before.witnesses.keys()].sort()).toEqual([ids[0], ids[2]].sort());
    expect((await replayWorkspace(app.runtime.db, ws.workspaceId)).state).toEqual(before);
    await app.runtime.db.execute(sql`delete from ledger_witnesses where workspace_id = ${ws.workspaceId}`);
    expect((await app.request('GET', '/ledger/witnesses', { key: ws.apiKey })).body.data).toEqual([]);
    const [report] = await rebuildProjections(app.runtime.db, ws.workspaceId);
    expect(report!.rows.witnesses).toBe(2);
    expect(await loadFromTables(app.runtime.db, ws.workspaceId)).toEqual(before);
    const list = await app.request('GET', '/ledger/witnesses', { key: ws.apiKey });
    expect(list.body.data.map((w: { vkey: string }) => w.vkey)).toEqual([vkeyOf(keys[0]!), vkeyOf(keys[2]!)]);
  });
});
