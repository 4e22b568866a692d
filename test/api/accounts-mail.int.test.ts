/**
 * Changing one's password (the current one required, under the sign-in limit; every session so far
 * ends), and invitation and attention emails sent through a real SMTP server (smtp-server on
 * 127.0.0.1). Both engines.
 */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { users } from '@/db/schema';
import { hashPassword } from '@/server/auth/passwords';
import { checkSignIn } from '@/server/auth/sign-in';
import { encodeSession } from '@/server/auth/session';
import { startSmtp } from '../support/smtp';
import { startTestApp, type TestApp } from '../support/app';
import { internalClient } from '../support/internal';

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

/** A message's text with quoted-printable undone (soft line breaks and =XX bytes). */
function bodyOf(raw: string): string {
  const qp = raw.replace(/=\r?\n/g, '');
  return Buffer.from(
    qp.replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    'latin1',
  ).toString('utf8');
}

describe('attention emails', () => {
  it('mail every approver and owner, one message each, with the title, recommendation, what waiting costs and the link', async () => {
    const ws = await app.createWorkspace();
    const approver = await app.member('approver', ws.workspaceId);
    const viewer = await app.member('viewer', ws.workspaceId);
    const raised = await app.request('POST', '/decisions', {
      key: ws.apiKey,
      body: {
        workspace_id: ws.workspaceId,
        title: 'Refund order 1042?',
        shape: 'option_select',
        shape_context: {
          options: [
            { id: 'refund', label: 'Refund in full' },
            { id: 'credit', label: 'Store credit' },
          ],
        },
      },
    });
    expect(raised.status).toBe(201);
    const id = raised.body.decision.id;
    const asked = await app.request('POST', `/decisions/${id}/attention`, {
      key: ws.apiKey,
      body: {
        recommended_option_id: 'refund',
        recommendation_note: 'The customer was charged twice',
        impact_if_delayed: 'A chargeback in 2 days',
      },
    });
    expect(asked.status).toBe(200);
    const ownerEmail = (await app.request('GET', '/workspace', { key: ws.apiKey })).body.data.name + '@test.local';
    await expect.poll(() => smtp.messages.filter((m) => bodyOf(m.raw).includes(id)).length).toBe(2);
    const mails = smtp.messages.filter((m) => bodyOf(m.raw).includes(id));
    expect(mails.map((m) => m.to).sort()).toEqual([[approver.email], [ownerEmail]].sort());
    expect(mails.some((m) => m.to.includes(viewer.email))).toBe(false);
    const body = bodyOf(mails[0]!.raw);
    expect(mails[0]!.raw).toMatch(/Subject: Ruling needed: Refund order 1042\?/);
    expect(body).toContain('Refund order 1042?');
    expect(body).toContain('Recommendation: Refund in full (refund): The customer was charged twice');
    expect(body).toContain('What waiting costs: A chargeback in 2 days');
    expect(body).toContain(asked.body.data.resolve_url);

    // Asking again mails again, saying so.
    await app.request('POST', `/decisions/${id}/attention`, { key: ws.apiKey, body: {} });
    await expect.poll(() => smtp.messages.filter((m) => bodyOf(m.raw).includes(id)).length).toBe(4);
    expect(bodyOf(smtp.messages.at(-1)!.raw)).toContain('(asked 2 times)');
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
