/**
 * Concurrency on both engines: every idempotent operation raced by 20 copies of one request (one
 * Idempotency-Key, one body), and human rulings raced against each other on 50 pending decisions.
 * What must hold (docs/contract.md §3, §5.6): one write and its events, every other answer a replay or
 * 409 idempotency_in_progress, never a 5xx; one ruling per decision, one ruling event, and a
 * chain that still verifies.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { startTestApp, type ApiResponse, type TestApp, type TestMember } from '../support/app';
import { launchTree } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

/** Runs `fn` over `items`, at most `width` at a time, results in the order of `items`. */
async function bounded<T, R>(items: readonly T[], width: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!, i);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return out;
}

/**
 * Row counts of every table of the schema, so that "the rest wrote nothing" covers tables a
 * write might touch by mistake, not only those it should. Rate-limit counters move with every
 * request and say nothing about writes.
 */
async function tableCounts(): Promise<Record<string, number>> {
  const tables = await query<{ name: string }>(
    app.runtime.db,
    sql`select table_name as name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> 'rate_limit_counters'
        order by table_name`,
  );
  const select = tables.map((t) => `(select count(*) from "${t.name}")::int as "${t.name}"`).join(', ');
  const [row] = await query<Record<string, number>>(app.runtime.db, sql.raw(`select ${select}`));
  return row!;
}

/** Ledger events of the workspace by type. */
async function eventsByType(workspaceId = app.ws.workspaceId): Promise<Record<string, number>> {
  const rows = await query<{ type: string; n: number }>(
    app.runtime.db,
    sql`select event_type as type, count(*)::int as n from ledger_events where workspace_id = ${workspaceId} group by event_type`,
  );
  return Object.fromEntries(rows.map((r) => [r.type, r.n]));
}

function delta(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of new Set([...Object.keys(after), ...Object.keys(before)])) {
    const d = (after[name] ?? 0) - (before[name] ?? 0);
    if (d !== 0) out[name] = d;
  }
  return out;
}

async function verifyChain(): Promise<void> {
  const res = await app.request('GET', '/ledger/verify');
  expect(res.status).toBe(200);
  expect(res.body.data.firstBreak).toBeNull();
  expect(res.body.data.ok).toBe(true);
  expect(res.body.data.checkedEvents).toBe(res.body.data.head.sequence);
}

const newTask = async (title: string): Promise<string> => {
  const res = await app.request('POST', '/work', { body: { title } });
  expect(res.status).toBe(201);
  return res.body.data.taskId;
};
const newRun = async (title: string): Promise<{ taskId: string; runId: string }> => {
  const taskId = await newTask(title);
  const res = await app.request('POST', '/runs', { body: { task_id: taskId, agent_id: 'agent-race' } });
  expect(res.status).toBe(201);
  return { taskId, runId: res.body.data.runId };
};

interface Prepared {
  path: string;
  body: Record<string, unknown>;
}

interface IdempotentOperation {
  name: string;
  /** Builds what the request needs (a task to run, a run to checkpoint) and the request itself. */
  prepare(): Promise<Prepared>;
  /** Rows each table gains from the one write (the idempotency record included). */
  rows: Record<string, number>;
  /** Ledger events the one write appends, by type. */
  events: Record<string, number>;
  /** How a replay shows the original body: the documented duplicate flags, per operation. */
  replayOf(original: any): unknown;
  /** The aggregate ids the original response names: the write's events must be about them. */
  aggregates(original: any): string[];
}

// The list of operations whose procedure passes `replay:` to its write (server/api/routers/*/).
const operations: IdempotentOperation[] = [
  {
    name: 'POST /work',
    prepare: async () => ({ path: '/work', body: { title: 'Raced work', priority: 'high', estimate_hours: 1.5 } }),
    rows: { tasks: 1, receipts: 1, ledger_events: 1, idempotency_records: 1 },
    events: { 'work.created': 1 },
    // data.duplicate and meta.duplicate (docs/contract.md §3: "in data where the seed has it and in meta").
    replayOf: (b) => ({ data: { ...b.data, duplicate: true }, meta: { ...b.meta, duplicate: true } }),
    aggregates: (b) => [b.data.taskId],
  },
  {
    name: 'POST /decisions',
    // A blocking decision on a running run: besides the decision it pauses the run and blocks the
    // task, so a second execution would show as more events and a changed run, not just a row.
    prepare: async () => {
      const { taskId, runId } = await newRun('Blocked by a raced decision');
      return {
        path: '/decisions',
        body: {
          workspace_id: app.ws.workspaceId,
          title: 'Raced decision',
          task_id: taskId,
          run_id: runId,
          blocks_task: true,
          shape_context: {
            options: [
              { id: 'left', label: 'Left' },
              { id: 'right', label: 'Right' },
            ],
          },
        },
      };
    },
    rows: { decisions: 1, ledger_events: 3, idempotency_records: 1 },
    events: { 'decision.created': 1, 'run.paused': 1, 'task.status_changed': 1 },
    // The seed's shape ({ decision }) has no duplicate flag: the replay is the original as it was.
    replayOf: (b) => b,
    aggregates: (b) => [b.decision.id],
  },
  {
    name: 'POST /initiatives',
    prepare: async () => ({ path: '/initiatives', body: { ...launchTree, title: 'Raced initiative' } }),
    rows: { initiatives: 1, workstreams: 2, milestones: 3, tasks: 3, ledger_events: 9, idempotency_records: 1 },
    events: { 'initiative.created': 1, 'workstream.created': 2, 'milestone.created': 3, 'task.created': 3 },
    // meta.duplicate only.
    replayOf: (b) => ({ ...b, meta: { ...b.meta, duplicate: true } }),
    aggregates: (b) => [b.data.initiative.id],
  },
  {
    name: 'POST /runs',
    prepare: async () => ({ path: '/runs', body: { task_id: await newTask('Run me once'), agent_id: 'agent-race' } }),
    // The task is updated (todo → in_progress), not added.
    rows: { runs: 1, ledger_events: 2, idempotency_records: 1 },
    events: { 'run.created': 1, 'task.status_changed': 1 },
    replayOf: (b) => b,
    aggregates: (b) => [b.data.runId],
  },
  {
    name: 'POST /runs/{runId}/checkpoints',
    prepare: async () => {
      const { runId } = await newRun('Checkpoint me once');
      return {
        path: `/runs/${runId}/checkpoints`,
        body: { label: 'raced', state: { step: 3, notes: ['a', 'b'], nested: { z: 1, a: 2 } } },
      };
    },
    rows: { run_checkpoints: 1, ledger_events: 1, idempotency_records: 1 },
    events: { 'run.checkpointed': 1 },
    replayOf: (b) => b,
    aggregates: (b) => [b.data.runId],
  },
];

describe('20 parallel first uses of one Idempotency-Key', () => {
  it.each(operations.map((op) => [op.name, op] as const))('%s writes once; every other answer is a replay or 409', async (_, op) => {
    const request = await op.prepare();
    const key = `race-${randomUUID()}`;
    const send = () => app.request('POST', request.path, { body: request.body, headers: { 'idempotency-key': key } });
    const rowsBefore = await tableCounts();
    const eventsBefore = await eventsByType();

    const results = await Promise.all(Array.from({ length: 20 }, send));

    const describeAll = results.map((r) => `${r.status} ${r.text.slice(0, 120)}`).join('\n');
    for (const r of results) expect([200, 201, 409], describeAll).toContain(r.status);
    const created = results.filter((r) => r.status === 201);
    expect(created, describeAll).toHaveLength(1);
    const original = created[0]!;
    const replays = results.filter((r) => r.status === 200);
    const inProgress = results.filter((r) => r.status === 409);
    for (const r of inProgress) {
      expect(r.body.error.code).toBe('idempotency_in_progress');
      expect(r.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    }
    // Replays come from the one stored response: the same bytes every time, and the original
    // body with the operation's duplicate flags.
    expect(new Set(replays.map((r) => r.text)).size).toBeLessThanOrEqual(1);
    for (const r of replays) expect(r.body).toEqual(op.replayOf(original.body));

    // Exactly the rows and events of one execution, in every table.
    expect(delta(await tableCounts(), rowsBefore)).toEqual(op.rows);
    expect(delta(await eventsByType(), eventsBefore)).toEqual(op.events);
    // …and they are the winner's: its key, its aggregates.
    const keyed = await query<{ type: string; aggregate: string }>(
      app.runtime.db,
      sql`select event_type as type, aggregate_id as aggregate from ledger_events
          where workspace_id = ${app.ws.workspaceId} and idempotency_key = ${key}`,
    );
    const keyedTypes: Record<string, number> = {};
    for (const e of keyed) keyedTypes[e.type] = (keyedTypes[e.type] ?? 0) + 1;
    expect(keyedTypes).toEqual(op.events);
    for (const id of op.aggregates(original.body)) expect(keyed.map((e) => e.aggregate)).toContain(id);

    // A later retry still replays the same bytes, and writes nothing.
    const settled = await tableCounts();
    const later = await send();
    expect(later.status).toBe(200);
    expect(later.body).toEqual(op.replayOf(original.body));
    if (replays.length > 0) expect(later.text).toBe(replays[0]!.text);
    expect(await tableCounts()).toEqual(settled);
    await verifyChain();
  });
});

describe('rulings raced on 50 pending decisions', () => {
  const RACES = 50;
  let approver: TestMember;
  let secondApprover: TestMember;
  let owner: TestMember;
  beforeAll(async () => {
    approver = await app.member('approver');
    secondApprover = await app.member('approver');
    owner = await app.member('owner');
  });

  type Action = 'approve' | 'decline';
  const outcomeOf = { approve: 'approved', decline: 'declined' } as const;
  const cases: [string, () => [Action, TestMember][]][] = [
    [
      'approve (an approver) vs decline (an owner)',
      () => [
        ['approve', approver],
        ['decline', owner],
      ],
    ],
    [
      'approve vs approve (two approvers)',
      () => [
        ['approve', approver],
        ['approve', secondApprover],
      ],
    ],
  ];

  it.each(cases)('%s: one ruling wins, the other is 409 decision_not_pending, one ruling’s events each', async (_, sides) => {
    const contenders = sides();
    // Raised by the API key, so that either human may rule on them.
    const decisions = await bounded(Array.from({ length: RACES }), 8, async (__, i) => {
      const res = await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: `Race ${i}` } });
      expect(res.status).toBe(201);
      return res.body.decision.id as string;
    });
    const eventsBefore = await eventsByType();
    const rowsBefore = await tableCounts();

    // Both rulings of a race are sent at once; which is sent first alternates, so that each side
    // gets to win (on PGlite, where transactions queue, the first one sent always wins). Ten races
    // run side by side: they contend for the workspace's ledger lock too.
    const races = await bounded(decisions, 10, async (id, i) => {
      const order = i % 2 === 0 ? contenders : [...contenders].reverse();
      const answers = await Promise.all(
        order.map(([action, who]) => app.request('POST', `/decisions/${id}/${action}`, { session: who.session, body: {} })),
      );
      return { id, order, answers };
    });

    const winners: { id: string; action: Action; who: TestMember }[] = [];
    for (const { id, order, answers } of races) {
      const seen = answers.map((a: ApiResponse) => `${a.status} ${a.text.slice(0, 200)}`).join('\n');
      expect(answers.map((a) => a.status).sort(), seen).toEqual([200, 409]);
      const w = answers.findIndex((a) => a.status === 200);
      const [action, who] = order[w]!;
      const won = answers[w]!.body.decision;
      expect(won.status).toBe(outcomeOf[action]);
      expect(won.resolution).toMatchObject({ outcome: outcomeOf[action], resolved_by: who.userId });
      const lost = answers[1 - w]!;
      expect(lost.body.error.code).toBe('decision_not_pending');
      expect(lost.body.error.details.status).toBe(outcomeOf[action]);
      winners.push({ id, action, who });
    }
    if (new Set(contenders.map(([action]) => action)).size === 2) {
      // Both outcomes occurred: the race was fought from both sides.
      expect(new Set(winners.map((w) => w.action))).toEqual(new Set(['approve', 'decline']));
    }

    // The stored state and the ledger agree with the winner, once per decision.
    const rulings = await query<{ id: string; status: string; resolved_by: string; events: string[]; actors: string[] }>(
      app.runtime.db,
      sql`select d.id, d.status, d.resolution->>'resolved_by' as resolved_by,
                 coalesce(array_agg(e.event_type order by e.sequence) filter (where e.id is not null), '{}') as events,
                 coalesce(array_agg(e.actor_id order by e.sequence) filter (where e.id is not null), '{}') as actors
          from decisions d
          left join ledger_events e on e.workspace_id = d.workspace_id and e.aggregate_id = d.id
                                   and e.event_type in ('decision.approved', 'decision.declined')
          where d.id = any(string_to_array(${decisions.join(',')}, ',')::uuid[])
          group by d.id, d.status, d.resolution`,
    );
    expect(rulings).toHaveLength(RACES);
    const byId = new Map(rulings.map((r) => [r.id, r]));
    for (const w of winners) {
      expect(byId.get(w.id)).toEqual({
        id: w.id,
        status: outcomeOf[w.action],
        resolved_by: w.who.userId,
        events: [`decision.${outcomeOf[w.action]}`],
        actors: [w.who.userId],
      });
    }
    // Nothing but the 50 winning rulings was written: no event, no row of a losing one.
    const expected: Record<string, number> = {};
    // An approval is recorded towards the decision's policy (one approval) before the decision is approved.
    for (const w of winners) {
      const types = w.action === 'approve' ? ['decision.approval_recorded', 'decision.approved'] : ['decision.declined'];
      for (const type of types) expected[type] = (expected[type] ?? 0) + 1;
    }
    expect(delta(await eventsByType(), eventsBefore)).toEqual(expected);
    const written = Object.values(expected).reduce((n, k) => n + k, 0);
    expect(delta(await tableCounts(), rowsBefore)).toEqual({ ledger_events: written });
    await verifyChain();
  });
});
