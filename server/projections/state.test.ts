/**
 * The replay reads payloads in every shape the ledger has stored: events written by the first
 * versions (the Inbox's nodes and POST /work's task before they carried every field, nodes from
 * before siblings kept their order) replay into the rows the tables hold for them, and a payload
 * its type cannot read fails naming its event.
 */
import { describe, expect, it } from 'vitest';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { fold } from './state';

const workspaceId = '00000000-0000-4000-8000-000000000001';
const ids = { initiative: 'i-1', workstream: 'w-1', milestone: 'm-1', task: 't-1', receipt: 'r-1', tree: 't-2' };
let sequence = 0;

function event(aggregateType: string, aggregateId: string, eventType: string, payload: Record<string, unknown>): LedgerEvent {
  sequence += 1;
  return {
    id: `e-${sequence}`,
    workspaceId,
    sequence,
    ownerId: 'u-1',
    aggregateType,
    aggregateId,
    aggregateVersion: 1,
    eventType,
    schemaVersion: 1,
    actorType: 'system',
    actorId: 'system:test',
    payload,
    payloadDigest: 'sha256:0',
    occurredAtCanonical: '2026-11-22T06:00:00.000Z',
    idempotencyKey: null,
    causationId: 'c',
    correlationId: 'c',
    contextManifestDigest: 'sha256:0',
    previousHash: 'sha256:0',
    eventHash: `sha256:${sequence}`,
  };
}

describe('replaying payloads of the first versions', () => {
  // As the first workspace setup and POST /work wrote them (before the records carried summary,
  // goal, domain, agent_id, depends_on, type and position).
  const first = [
    event('workspace', workspaceId, 'workspace.created', { name: 'Acme' }),
    event('membership', 'u-1', 'membership.created', { user_id: 'u-1', role: 'owner' }),
    event('initiative', ids.initiative, 'initiative.created', {
      id: ids.initiative,
      title: 'Inbox',
      status: 'active',
      visibility: 'workspace',
      model_tier: 'standard',
      execution_policy: { mode: 'manual', max_concurrent_agents: 1 },
      is_inbox: true,
    }),
    event('workstream', ids.workstream, 'workstream.created', {
      id: ids.workstream,
      initiative_id: ids.initiative,
      name: 'Inbox',
      status: 'active',
    }),
    event('milestone', ids.milestone, 'milestone.created', {
      id: ids.milestone,
      workstream_id: ids.workstream,
      title: 'Inbox',
      status: 'active',
    }),
    event('task', ids.task, 'work.created', {
      task: {
        id: ids.task,
        title: 'Write it down',
        description: null,
        status: 'todo',
        priority: 'medium',
        estimate_hours: null,
        initiative_id: ids.initiative,
        workstream_id: ids.workstream,
        milestone_id: ids.milestone,
        created_at: '2026-11-22T06:00:00.000Z',
        updated_at: '2026-11-22T06:00:00.000Z',
      },
      receipt: {
        id: ids.receipt,
        task_id: ids.task,
        status: 'completed',
        summary: 'Write it down',
        created_at: '2026-11-22T06:00:00.000Z',
      },
    }),
    // POST /initiatives before siblings kept their order: a task without its position.
    event('task', ids.tree, 'task.created', {
      id: ids.tree,
      initiative_id: ids.initiative,
      workstream_id: ids.workstream,
      milestone_id: ids.milestone,
      title: 'Plan it',
      description: null,
      status: 'todo',
      priority: 'high',
      type: 'research',
      estimate_hours: 2,
      agent_id: null,
      depends_on: [],
      created_at: '2026-11-22T07:40:00.000Z',
      updated_at: '2026-11-22T07:40:00.000Z',
    }),
  ];

  it('replays them into the rows the tables hold (the columns’ defaults where a field was not written yet)', () => {
    const state = fold(first);
    expect(state.initiatives.get(ids.initiative)).toMatchObject({ title: 'Inbox', summary: '', isInbox: true });
    expect(state.workstreams.get(ids.workstream)).toMatchObject({ goal: '', domain: 'general', agentId: null, dependsOn: [], position: 0 });
    expect(state.milestones.get(ids.milestone)).toMatchObject({ title: 'Inbox', position: 0 });
    expect(state.tasks.get(ids.task)).toMatchObject({ type: 'build', agentId: null, dependsOn: [], position: 0, priority: 'medium' });
    expect(state.tasks.get(ids.tree)).toMatchObject({ type: 'research', position: 0, estimateHours: 2 });
    expect(state.receipts.get(ids.receipt)).toMatchObject({ taskId: ids.task, summary: 'Write it down' });
    // Each default is a value of its own: rows never share one array.
    expect(state.workstreams.get(ids.workstream)!.dependsOn).not.toBe(state.tasks.get(ids.task)!.dependsOn);
  });

  it('keeps what a kept-whole value carries beyond the fields it reads', () => {
    const state = fold([
      event('initiative', 'i-2', 'initiative.created', {
        id: 'i-2',
        title: 'Later',
        summary: 'x',
        status: 'active',
        visibility: 'private',
        model_tier: 'premium',
        execution_policy: { mode: 'parallel', max_concurrent_agents: 3, note: 'kept' },
        is_inbox: false,
      }),
    ]);
    expect(state.initiatives.get('i-2')!.executionPolicy).toEqual({ mode: 'parallel', max_concurrent_agents: 3, note: 'kept' });
  });

  it('fails on a payload its type cannot read, naming the event', () => {
    const broken = event('task', 'x', 'task.updated', { task_id: 'x' });
    expect(() => fold([...first, broken])).toThrow(new RegExp(`event ${broken.sequence} \\(task\\.updated\\) carries a payload`));
  });

  it('fails on a type the registry does not know', () => {
    expect(() => fold([event('task', 'x', 'test.noted', {})])).toThrow(/no projection rule for event type test\.noted/);
  });
});
