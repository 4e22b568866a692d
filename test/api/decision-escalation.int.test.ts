/**
 * Escalation under a decision policy, with the service's own background jobs: a step
 * due 2 s after the decision was raised reaches its people within 5 s, by email through a real
 * SMTP server (smtp-server on 127.0.0.1) and by webhook delivery to a real receiver, with one
 * `decision.escalated` event; the people it names may rule from then on, and not before. Both engines.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisions } from '@/db/schema';
import { startBackgroundJobs } from '@/server/jobs';
import { replayWorkspace } from '@/server/projections/rebuild';
import { loadFromTables } from '@/server/projections/state';
import { startSmtp } from '../support/smtp';
import { startTestApp, type TestApp } from '../support/app';
import { receiverPool } from '../support/receiver';

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let app: TestApp;
let stopJobs: () => Promise<void>;
const receivers = receiverPool();
beforeAll(async () => {
  smtp = await startSmtp();
  app = await startTestApp({ SMTP_URL: smtp.url, MAIL_FROM: 'AWS <aws@test.local>', WEBHOOKS_ALLOW_PRIVATE: 'true' });
  stopJobs = startBackgroundJobs(app.runtime);
});
afterAll(async () => {
  await stopJobs?.();
  await receivers.closeAll();
  await app?.close();
  await smtp?.close();
});

async function until<T>(what: string, read: () => T | undefined | Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('escalation', () => {
  it('a step due after 2 s reaches its group within 5 s by email and webhook, with one event; they may rule from then on', async () => {
    const ws = await app.createWorkspace();
    const approver = await app.member('approver', ws.workspaceId);
    const lead = await app.member('approver', ws.workspaceId);
    const receiver = await receivers.start();
    const hook = await app.request('POST', '/webhooks', {
      key: ws.apiKey,
      body: { url: `${receiver.url}/hook`, event_types: ['decision.escalated'] },
    });
    expect(hook.status).toBe(201);

    const raised = await app.request('POST', '/decisions', {
      key: ws.apiKey,
      body: {
        workspace_id: ws.workspaceId,
        title: 'Roll back the release?',
        policy: { approvers: { user_ids: [approver.userId] }, escalation: [{ after_seconds: 2, notify: { user_ids: [lead.userId] } }] },
      },
    });
    expect(raised.status).toBe(201);
    const decision = raised.body.decision;
    const createdAt = Date.parse(decision.created_at);

    // Before the step is due, the lead is not asked.
    const early = await app.request('POST', `/decisions/${decision.id}/approve`, { session: lead.session, body: {} });
    expect(early.status).toBe(403);

    const mail = await until('the lead’s email', () => smtp.messages.find((m) => m.to.includes(lead.email)), 8_000);
    const [delivery] = await receiver.waitFor(1, 8_000);
    expect(mail.at - createdAt).toBeGreaterThanOrEqual(2_000);
    expect(mail.at - createdAt).toBeLessThanOrEqual(5_000);
    expect(delivery!.at - createdAt).toBeLessThanOrEqual(5_000);
    expect(mail.raw).toMatch(/Subject: Escalated to you: Roll back the release\?/);
    expect(mail.raw.replace(/=\r?\n/g, '')).toContain(`/decisions/${decision.id}`);
    expect(smtp.messages.filter((m) => m.to.includes(approver.email))).toEqual([]);

    const delivered = JSON.parse(delivery!.body);
    expect(delivered).toMatchObject({ eventType: 'decision.escalated', aggregateId: decision.id, actorType: 'system' });
    expect(delivered.payload).toMatchObject({ step: 0, after_seconds: 2, notified: [lead.userId], escalated_steps: 1 });

    const polled = (await app.request('GET', `/decisions/${decision.id}`, { key: ws.apiKey })).body.decision;
    expect(polled.history.filter((h: { event_type: string }) => h.event_type === 'decision.escalated')).toHaveLength(1);
    expect(polled.escalated_steps).toBe(1);

    // The step names the lead: they may rule now.
    const ruled = await app.request('POST', `/decisions/${decision.id}/approve`, { session: lead.session, body: {} });
    expect(ruled.status).toBe(200);
    expect(ruled.body.decision.status).toBe('approved');
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('a decision overdue before its step comes is timed out, not escalated', async () => {
    const ws = await app.createWorkspace();
    const raised = await app.request('POST', '/decisions', {
      key: ws.apiKey,
      body: {
        workspace_id: ws.workspaceId,
        title: 'Late one',
        due_at: new Date(Date.now() + 1_500).toISOString(),
        on_timeout: 'decline',
        policy: { escalation: [{ after_seconds: 2, notify: { roles: ['owner'] } }] },
      },
    });
    expect(raised.status).toBe(201);
    // Past the step's time and the job's next pass, but before the timeout sweep's (every 5 s).
    await new Promise((r) => setTimeout(r, 3_500));
    const rows = await app.runtime.db.select().from(decisions).where(eq(decisions.id, raised.body.decision.id));
    expect(rows[0]!.status).toBe('declined');
    expect(rows[0]!.escalatedSteps).toBe(0);
    const polled = (await app.request('GET', `/decisions/${raised.body.decision.id}`, { key: ws.apiKey })).body.decision;
    expect(polled.history.map((h: { event_type: string }) => h.event_type)).toEqual(['decision.created', 'decision.declined']);
  });

  it('a decision ruled before its step is due is never escalated', async () => {
    const ws = await app.createWorkspace();
    const approver = await app.member('approver', ws.workspaceId);
    const raised = await app.request('POST', '/decisions', {
      key: ws.apiKey,
      body: {
        workspace_id: ws.workspaceId,
        title: 'Quick one',
        policy: { escalation: [{ after_seconds: 1, notify: { roles: ['owner'] } }] },
      },
    });
    expect(
      (await app.request('POST', `/decisions/${raised.body.decision.id}/approve`, { session: approver.session, body: {} })).status,
    ).toBe(200);
    await new Promise((r) => setTimeout(r, 2_500));
    const polled = (await app.request('GET', `/decisions/${raised.body.decision.id}`, { key: ws.apiKey })).body.decision;
    expect(polled.history.map((h: { event_type: string }) => h.event_type)).not.toContain('decision.escalated');
  });
});
