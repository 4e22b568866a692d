/**
 * What one ruling costs the database: the approval of a decision with an action on a task reads the
 * decision once (under the ledger lock), the task's version once, and appends its events (the
 * ruling's, then the grant's) in one append. Counted from the statements the driver sends, on a
 * database handle of its own with a query logger.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '@/db';
import { systemTrace } from '@/server/domain/actor';
import { ruleOnDecision } from '@/server/domain/decisions/rule';
import { signingOf } from '@/server/runtime';
import { startTestApp, type TestApp, type TestMember } from '../support/app';

let app: TestApp;
let approver: TestMember;
beforeAll(async () => {
  app = await startTestApp();
  approver = await app.member('approver');
});
afterAll(async () => {
  await app?.close();
});

describe('an approval with an action', () => {
  it('reads the decision and its target once and appends once, the grant for the target as it is', async () => {
    const work = await app.request('POST', '/work', { body: { title: 'Ship the fix' } });
    expect(work.status).toBe(201);
    const target = { type: 'task', id: work.body.data.taskId, version: work.body.data.aggregateVersion };
    const raised = await app.request('POST', '/decisions', {
      body: { workspace_id: app.ws.workspaceId, title: 'Deploy?', action: { tool: 'deploy', arguments: { service: 'api' }, target } },
    });
    expect(raised.status).toBe(201);
    const decisionId = raised.body.decision.id as string;

    const logged: string[] = [];
    const handle = await openDatabase({
      url: app.runtime.databaseUrl!,
      poolMax: 1,
      logger: { logQuery: (text) => void logged.push(text) },
    });
    try {
      const actor = {
        type: 'human' as const,
        id: approver.userId,
        ownerId: approver.userId,
        workspaceId: app.ws.workspaceId,
        role: 'approver' as const,
        trace: systemTrace(randomUUID()),
      };
      const row = await handle.db.transaction((tx) =>
        ruleOnDecision(tx, actor, decisionId, { outcome: 'approved' }, signingOf(app.runtime)),
      );
      expect(row.status).toBe('approved');
    } finally {
      await handle.close();
    }
    const count = (pattern: RegExp) => logged.filter((text) => pattern.test(text)).length;
    expect(count(/^select .* from "decisions"/)).toBe(1);
    expect(count(/^select .* from "tasks"/)).toBe(1);
    expect(count(/ledger_append\(/)).toBe(1);

    // One append, in the order the ruling's events have always had: the ruling, then the grant.
    const page = await app.request(
      'GET',
      '/events/stream?limit=100&type=decision.approval_recorded&type=decision.approved&type=grant.issued',
    );
    const events = (page.body.data as { aggregateId: string; eventType: string; sequence: number; payload: Record<string, any> }[]).filter(
      (e) => e.aggregateId === decisionId || e.payload.decision_id === decisionId,
    );
    expect(events.map((e) => e.eventType)).toEqual(['decision.approval_recorded', 'decision.approved', 'grant.issued']);
    expect(events.map((e) => e.sequence - events[0]!.sequence)).toEqual([0, 1, 2]);
    expect(events[2]!.payload).toMatchObject({ action_digest: events[1]!.payload.approved_action_digest, target });
  });
});
