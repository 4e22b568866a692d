/**
 * Two agents that both believe they hold a task can never both write (docs/contract.md §4.16). A
 * real agent process (e2e/stale-agent.ts, the typed client) claims a task and writes checkpoints
 * under its lease; it is stopped with SIGSTOP mid-work, the server's own lease-expiry job fails its
 * run once the lease lapses, another agent claims the task, and the stopped agent is woken
 * (SIGCONT): everything it sends is refused with 409 lease_expired and nothing of it is written.
 * The task page shows the new holder and the one whose lease lapsed.
 */
import { randomUUID } from 'node:crypto';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { fixture, runAgent, signIn } from './support';

const LEASE_SECONDS = 5;

async function call(request: APIRequestContext, method: 'GET' | 'POST', url: string, data?: unknown) {
  const res = await request.fetch(`/api/v1${url}`, {
    method,
    headers: { Authorization: `Bearer ${fixture().apiKey}`, ...(data === undefined ? {} : { 'Content-Type': 'application/json' }) },
    data: data === undefined ? undefined : JSON.stringify(data),
  });
  return { status: res.status(), body: res.status() === 204 ? null : await res.json() };
}

interface Event {
  aggregateId: string;
  eventType: string;
  occurredAtCanonical: string;
  actorId: string;
  payload: Record<string, unknown>;
}

/** Every event about `aggregateId` (a run or a task), oldest first, read off the event stream. */
async function eventsOf(request: APIRequestContext, aggregateId: string): Promise<Event[]> {
  const types = ['run.created', 'run.checkpointed', 'run.lease_renewed', 'run.lease_expired', 'run.completed', 'run.failed'];
  const query = [...types, 'task.created', 'task.status_changed', 'task.updated'].map((t) => `type=${t}`).join('&');
  const found: Event[] = [];
  let cursor: string | null = null;
  do {
    const res = await call(request, 'GET', `/events/stream?${query}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    found.push(...(res.body.data as Event[]).filter((e) => e.aggregateId === aggregateId));
    cursor = res.body.meta.hasMore ? res.body.meta.nextCursor : null;
  } while (cursor);
  return found;
}

test('an agent stopped past its lease loses its task to the next, and nothing it sends on waking is written', async ({ page, request }) => {
  test.setTimeout(60_000);
  const created = await call(request, 'POST', '/initiatives', {
    title: `Fenced work ${randomUUID().slice(0, 6)}`,
    workstreams: [{ name: 'W', milestones: [{ ref: 'm', title: 'M', tasks: [{ ref: 't', title: 'One task, two believers' }] }] }],
  });
  expect(created.status).toBe(201);
  const initiativeId = created.body.data.initiative.id as string;
  const taskId = created.body.data.refs.t as string;

  const {
    child: agent,
    output,
    exited,
  } = runAgent('e2e/stale-agent.ts', {
    AWS_INITIATIVE: initiativeId,
    AWS_LEASE_SECONDS: String(LEASE_SECONDS),
  });
  try {
    await expect.poll(() => /checkpoint ok 2/.test(output.out), { timeout: 30_000, message: `${output.out}\n${output.err}` }).toBe(true);
    const staleRun = /claimed (\S+) fence (\d+)/.exec(output.out)!;
    const staleRunId = staleRun[1]!;
    expect(staleRun[2]).toBe('1');

    // Frozen mid-work: no heartbeat, no write, until it is woken.
    agent.kill('SIGSTOP');
    await expect
      .poll(async () => (await call(request, 'GET', `/runs/${staleRunId}`)).body.data.status, { timeout: (LEASE_SECONDS + 5) * 1000 })
      .toBe('failed');
    const failed = (await call(request, 'GET', `/runs/${staleRunId}`)).body.data;
    expect(failed.failure_reason).toBe('lease_expired');
    const history = await eventsOf(request, staleRunId);
    const expired = history.find((e) => e.eventType === 'run.lease_expired')!;
    expect(expired.actorId).toBe('system:lease-expiry');
    // Failed within lease_seconds + 2 s of the last renewal (the lapse itself is the expired event's cause).
    const lapsedAt = Date.parse(expired.payload.lease_expired_at as string);
    const renewedAt = Date.parse(history.filter((e) => e.eventType !== 'run.lease_expired').at(-1)!.occurredAtCanonical);
    expect(lapsedAt - renewedAt).toBe(LEASE_SECONDS * 1000);
    expect(Date.parse(expired.occurredAtCanonical) - lapsedAt).toBeLessThanOrEqual(2_000);

    // The task went back to the queue, and another agent takes it.
    const next = await call(request, 'POST', '/tasks/claim', { agent_id: 'fresh-agent', filters: { initiative_id: initiativeId } });
    expect(next.status).toBe(201);
    expect(next.body.data.task.id).toBe(taskId);
    expect(next.body.data.run.fence).toBe(2);
    const freshRunId = next.body.data.run.runId as string;
    expect((await call(request, 'POST', `/runs/${freshRunId}/checkpoints`, { label: 'fresh work' })).status).toBe(201);

    // Woken: it still believes it holds the task. Every write it tries is refused.
    const eventsBefore = (await eventsOf(request, staleRunId)).length;
    const taskEventsBefore = (await eventsOf(request, taskId)).length;
    agent.kill('SIGCONT');
    expect(await exited, `${output.out}\n${output.err}`).toBe(0);
    expect(output.out).toMatch(/checkpoint refused 409 lease_expired|lease lost lease_expired/);
    expect(output.out).toContain('finish 409 lease_expired');
    expect(output.out).not.toMatch(/checkpoint ok \d+\n[\s\S]*lease_expired[\s\S]*checkpoint ok/);
    expect((await eventsOf(request, staleRunId)).length).toBe(eventsBefore);
    expect((await eventsOf(request, taskId)).length).toBe(taskEventsBefore);
    const fresh = (await call(request, 'GET', `/runs/${freshRunId}`)).body.data;
    expect(fresh).toMatchObject({ status: 'running', fence: 2, checkpoints: [{ label: 'fresh work' }] });

    // Seen by humans: who holds it now, and who held it until their lease lapsed.
    await signIn(page, fixture().users.owner);
    await page.goto(`/tasks/${taskId}`);
    await expect(page.getByTestId('holder')).toContainText('fresh-agent');
    await expect(page.getByTestId('holder')).toContainText('fence 2');
    await expect(page.getByTestId('lapsed-holders')).toContainText('stale-agent');
    await expect(page.getByTestId('lapsed-holders')).toContainText('fence 1');
  } finally {
    if (agent.exitCode === null) {
      agent.kill('SIGCONT');
      agent.kill('SIGKILL');
    }
  }
});
