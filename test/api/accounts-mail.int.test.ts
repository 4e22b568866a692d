/**
 * Changing one's password (the current one required, under the sign-in limit; every session so far
 * ends), and invitation emails sent through a real SMTP server (smtp-server on 127.0.0.1). Both engines.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { users } from '@/db/schema';
import { hashPassword } from '@/server/auth/passwords';
import { checkSignIn } from '@/server/auth/sign-in';
import { encodeSession } from '@/server/auth/session';
import { startTestApp, type TestApp } from '../support/app';
import { internalClient } from '../support/internal';

interface Received {
  to: string[];
  raw: string;
}

/** A local SMTP server that keeps every message it is given. */
async function startSmtp(): Promise<{ url: string; messages: Received[]; close: () => Promise<void> }> {
  const messages: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString()));
      stream.on('end', () => {
        messages.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return { url: `smtp://127.0.0.1:${port}`, messages, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let app: TestApp;
beforeAll(async () => {
  smtp = await startSmtp();
  app = await startTestApp({ SMTP_URL: smtp.url, MAIL_FROM: 'AWS <aws@test.local>' });
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

describe('invitation emails', () => {
  it('go out through SMTP_URL to the invitee, with the link', async () => {
    const api = internalClient(app.runtime);
    const owner = await app.member('owner');
    const email = `mail-${randomUUID().slice(0, 6)}@test.local`;
    const res = await api.mutate(
      'members.invite',
      { workspace_id: app.ws.workspaceId, email, role: 'approver' },
      { session: owner.session },
    );
    expect(res.status).toBe(200);
    expect(res.data.email).toEqual({ sent: true });
    const message = smtp.messages.find((m) => m.to.includes(email));
    expect(message).toBeDefined();
    expect(message!.raw).toContain('From: AWS <aws@test.local>');
    expect(message!.raw).toMatch(/Subject: You are invited to primary on Accountable Work Service/);
    // The link in the body (quoted-printable may fold it): the same one the owner saw.
    const body = message!.raw.replace(/=\r?\n/g, '');
    expect(body).toContain(res.data.link);
  });

  it('a mail server that cannot be reached does not lose the invitation: the link is still shown once', async () => {
    const unreachable = await startTestApp({ SMTP_URL: 'smtp://127.0.0.1:9' }, { primaryName: 'no-mail' });
    try {
      const owner = await unreachable.member('owner');
      const res = await internalClient(unreachable.runtime).mutate(
        'members.invite',
        { workspace_id: unreachable.ws.workspaceId, email: 'late@test.local', role: 'viewer' },
        { session: owner.session },
      );
      expect(res.status).toBe(200);
      expect(res.data.email).toEqual({ sent: false, reason: 'failed' });
      expect(res.data.link).toMatch(/\/invite\/awi_/);
    } finally {
      await unreachable.close();
    }
  });
});

describe('changing one’s password', () => {
  it('needs the current password, ends every session so far, and the new one signs in', async () => {
    const api = internalClient(app.runtime);
    const member = await app.member('viewer');
    const old = 'the old password is long';
    await app.runtime.db
      .update(users)
      .set({ passwordHash: await hashPassword(old) })
      .where(eq(users.id, member.userId));
    const other = await encodeSession(member.userId, app.runtime.secrets.auth);

    const wrong = await api.mutate(
      'account.changePassword',
      { current: 'not it', next: 'a brand new password' },
      { session: member.session },
    );
    expect(wrong.status).toBe(400);
    const short = await api.mutate('account.changePassword', { current: old, next: 'short' }, { session: member.session });
    expect(short.status).toBe(400);
    const crossSite = await api.mutate(
      'account.changePassword',
      { current: old, next: 'a brand new password' },
      { session: member.session, origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    // Nothing changed: the other session still works.
    expect((await app.request('GET', `/workspace?workspace_id=${app.ws.workspaceId}`, { session: other })).status).toBe(200);

    const ok = await api.mutate('account.changePassword', { current: old, next: 'a brand new password' }, { session: member.session });
    expect(ok.data).toEqual({ changed: true });
    expect((await app.request('GET', `/workspace?workspace_id=${app.ws.workspaceId}`, { session: other })).status).toBe(401);
    expect((await app.request('GET', `/workspace?workspace_id=${app.ws.workspaceId}`, { session: member.session })).status).toBe(401);
    const headers = new Headers({ 'x-forwarded-for': '10.7.0.1' });
    expect(await checkSignIn(app.runtime, member.email, old, headers)).toBeNull();
    const signedIn = await checkSignIn(app.runtime, member.email, 'a brand new password', headers);
    expect(signedIn).toMatchObject({ id: member.userId, epoch: 1 });
    const fresh = await encodeSession(member.userId, app.runtime.secrets.auth, signedIn!.epoch);
    expect((await app.request('GET', `/workspace?workspace_id=${app.ws.workspaceId}`, { session: fresh })).status).toBe(200);
  });

  it('guessing the current password through a session is limited like sign-in', async () => {
    const api = internalClient(app.runtime);
    const member = await app.member('viewer');
    for (let i = 0; i < 10; i++) {
      expect(
        (await api.mutate('account.changePassword', { current: `guess ${i}`, next: 'a brand new password' }, { session: member.session }))
          .status,
      ).toBe(400);
    }
    const refused = await api.mutate(
      'account.changePassword',
      { current: 'guess 11', next: 'a brand new password' },
      { session: member.session },
    );
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/^Too many password attempts\. Try again in/);
  });
});
