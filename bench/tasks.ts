/**
 * The work queue at scale: GET /tasks?ready=true&limit=50 (what an agent asks for next) on one
 * workspace with 1,000 tasks, then the same workspace grown to 100,000, in one run. The target is a
 * ratio (docs/contract.md §14): the large page's p50 within 1.5 × the small one's, i.e. the page is read off an
 * index and does not grow with the workspace.
 *
 * Tasks are written straight into the Inbox with SQL (as the ledger fill does for events: the
 * service's write path is measured elsewhere): 70 % todo, 20 % done, 10 % in progress, priorities
 * spread evenly, created a second apart, and never ANALYZEd.
 */
import http from 'node:http';
import postgres from 'postgres';
import { inboxIds } from '@/server/domain/workspaces/ids';
import { httpGet } from './ledger';
import { percentile, type BenchDb, type BenchWorkspace } from './lib';

export interface QueueFigures {
  tasks: number;
  p50: number;
  p99: number;
}

/**
 * Adds tasks `from` + 1 … `to` to the workspace's Inbox: 70 % todo, 20 % done, 10 % in progress, or
 * all todo (`allTodo`: a queue to claim from). No ANALYZE: what reads them must not depend on fresh
 * planner statistics.
 */
export async function grow(db: BenchDb, ws: BenchWorkspace, from: number, to: number, allTodo = false): Promise<void> {
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
  try {
    const inbox = inboxIds(ws.workspaceId);
    const status = allTodo ? sql`'todo'` : sql`case when g % 10 < 7 then 'todo' when g % 10 < 9 then 'done' else 'in_progress' end`;
    await sql`
      insert into tasks (id, workspace_id, initiative_id, workstream_id, milestone_id, title, priority, status, created_at, updated_at)
      select gen_random_uuid(), ${ws.workspaceId}, ${inbox.initiativeId}, ${inbox.workstreamId}, ${inbox.milestoneId},
             'queued work ' || g, (array['low','medium','high','urgent'])[1 + g % 4], ${status},
             timestamptz '2026-01-01' + g * interval '1 second', timestamptz '2026-01-01' + g * interval '1 second'
      from generate_series(${from + 1}::int, ${to}::int) g`;
  } finally {
    await sql.end();
  }
}

async function measure(baseUrl: string, ws: BenchWorkspace, tasks: number, samples: number): Promise<QueueFigures> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { authorization: `Bearer ${ws.apiKey}`, accept: 'application/json' };
  const url = `${baseUrl}/api/v1/tasks?ready=true&sort=priority&limit=50`;
  try {
    for (let i = 0; i < 30; i++) await httpGet(agent, url, headers); // warm the plan and the connection
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      const answer = await httpGet(agent, url, headers);
      times.push(performance.now() - t0);
      if (answer.status !== 200) throw new Error(`GET /tasks answered ${answer.status}: ${answer.body.slice(0, 200)}`);
      if (i === 0 && (JSON.parse(answer.body) as { data: unknown[] }).data.length !== 50) throw new Error('the queue page is not full');
    }
    return { tasks, p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    agent.destroy();
  }
}

/** The ready page on 1,000 tasks, then on `large` tasks, in the same workspace. */
export async function measureTaskQueue(baseUrl: string, db: BenchDb, ws: BenchWorkspace, large: number, samples = 300) {
  await grow(db, ws, 0, 1_000);
  const small = await measure(baseUrl, ws, 1_000, samples);
  await grow(db, ws, 1_000, large);
  const big = await measure(baseUrl, ws, large, samples);
  return { small, big };
}
