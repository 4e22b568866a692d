/**
 * A complete agent, written against the typed client (clients/typescript): it plans work, does it,
 * stops to ask a human, waits for the ruling on the event stream, finishes, and at the end checks
 * the workspace's ledger itself.
 *
 *   npm start                                  # prints the demo workspace's API key
 *   AWS_API_KEY=awk_… npx tsx examples/agent.ts
 *
 * Environment: AWS_API_KEY (required), AWS_BASE_URL (default http://127.0.0.1:3000/api/v1).
 * It prints what it does, one line a step; the line "Waiting for a ruling: <url>" names the page
 * where a signed-in human approves or declines. Exit status 0 when the work is done and the ledger
 * verifies, 1 otherwise.
 *
 * The steps:
 * 1. Create an initiative with a small tree (a workstream, a milestone, two tasks, the second
 *    depending on the first).
 * 2. Claim the next ready task of that initiative (POST /tasks/claim): its run starts with a
 *    lease, which the client keeps with heartbeats while the work runs (withLease).
 * 3. Work, and record a checkpoint (which renews the lease too).
 * 4. Raise a decision that blocks the task (the server pauses the run, which then holds no lease)
 *    and ask for attention.
 * 5. Wait for the ruling on the event stream (an SSE lease, resumed if cut; every link checked).
 * 6. Approved: resume the run (a new lease) and finish it under its lease. Declined: finish it as
 *    failed.
 * 7. Export the whole ledger (JSON pages), recompute every digest and hash (RFC 8785 + SHA-256,
 *    with none of the service's code), and compare with GET /ledger/verify.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { createAwsClient, type LedgerEvent } from '../clients/typescript';

const apiKey = process.env.AWS_API_KEY;
if (!apiKey) {
  console.error('Set AWS_API_KEY to a workspace API key (npm start prints the demo workspace’s).');
  process.exit(1);
}
const baseUrl = process.env.AWS_BASE_URL ?? 'http://127.0.0.1:3000/api/v1';
const aws = createAwsClient({ baseUrl, apiKey });
const { api } = aws;

/** The data of a successful answer; anything else stops the agent with the server's error. */
function ok<T>(step: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) throw new Error(`${step}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data;
}

const sha256 = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

async function main(): Promise<void> {
  const workspace = ok('GET /workspace', await api.GET('/workspace')).data;
  console.log(`Workspace: ${workspace.name} (${workspace.id})`);

  // 1. The plan.
  const created = ok(
    'POST /initiatives',
    await api.POST('/initiatives', {
      body: {
        workspace_id: workspace.id,
        title: `Quarterly report (example agent, ${new Date().toISOString()})`,
        workstreams: [
          {
            name: 'Reporting',
            milestones: [
              {
                title: 'First draft',
                tasks: [
                  { ref: 'numbers', title: 'Collect the quarter’s numbers', type: 'research' },
                  { ref: 'draft', title: 'Write the draft', depends_on: ['numbers'] },
                ],
              },
            ],
          },
        ],
      },
    }),
  );
  const initiativeId = created.data.initiative.id;
  console.log(`Initiative created: ${initiativeId}`);

  // 2. The next ready task of the plan (the first is ready, the second waits for it), and its run.
  //    No other agent can get it: a claim takes a task no other claim holds.
  const claimed = await aws.claim({ agentId: 'example-agent', filters: { initiative_id: initiativeId }, leaseSeconds: 60 });
  if (!claimed) throw new Error('no ready task in the new initiative');
  const { task, run } = claimed;
  console.log(`Claimed: ${task.title} (${task.id}), run ${run.runId}, fence ${run.fence}, lease until ${run.lease_expires_at}`);

  // 3. The work, under the run's lease: heartbeats keep it while this runs, and `signal` aborts if
  //    it is lost (the task may then be another agent's: nothing more is written).
  await aws.withLease(run, async (signal) => {
    ok(
      'POST /runs/{runId}/checkpoints',
      await api.POST('/runs/{runId}/checkpoints', {
        params: { path: { runId: run.runId } },
        body: { label: 'numbers collected', state: { rows: 42 } },
        signal,
      }),
    );
  });
  console.log('Checkpoint recorded: numbers collected');

  // Where the stream stands now: the ruling will come after it.
  let cursor: string | undefined;
  let head: LedgerEvent | undefined;
  for (;;) {
    const page = ok('GET /events/stream', await api.GET('/events/stream', { params: { query: { limit: 100, cursor } } }));
    head = page.data.at(-1) ?? head;
    cursor = page.meta.nextCursor ?? cursor;
    if (!page.meta.hasMore) break;
  }

  // 4. A question only a human may answer; the run pauses until then.
  const decision = ok(
    'POST /decisions',
    await api.POST('/decisions', {
      body: {
        workspace_id: workspace.id,
        title: 'Send the draft report to the board?',
        description: 'The numbers are in and the draft is written. It goes to eleven people outside the team.',
        urgency: 'urgent',
        task_id: task.id,
        run_id: run.runId,
        blocks_task: true,
      },
    }),
  ).decision;
  const attention = ok(
    'POST /decisions/{id}/attention',
    await api.POST('/decisions/{id}/attention', {
      params: { path: { id: decision.id } },
      body: { recommended_option_id: 'approve', recommendation_note: 'The numbers match the ledger.' },
    }),
  ).data;
  console.log(`Waiting for a ruling: ${attention.resolve_url}`);

  // 5. The ruling, as it is recorded.
  let outcome: 'approved' | 'declined' | 'cancelled' | 'expired' | undefined;
  const stop = new AbortController();
  for await (const event of aws.events({ cursor, previousHash: head?.eventHash, signal: stop.signal })) {
    if (event.aggregateId !== decision.id) continue;
    const kind = event.eventType.replace(/^decision\./, '');
    if (kind === 'approved' || kind === 'declined' || kind === 'cancelled' || kind === 'expired') {
      outcome = kind;
      stop.abort();
    }
  }
  console.log(`Ruling: ${outcome}`);

  // 6. Carry on, or stop.
  if (outcome === 'approved') {
    ok(
      'POST /runs/{runId}/actions/resume',
      await api.POST('/runs/{runId}/actions/{action}', { params: { path: { runId: run.runId, action: 'resume' } } }),
    );
    await aws.withLease(run, async (signal) => {
      ok(
        'POST /runs/{runId}/finish',
        await api.POST('/runs/{runId}/finish', {
          params: { path: { runId: run.runId } },
          body: { outcome: 'completed', summary: 'Draft sent to the board.' },
          signal,
        }),
      );
    });
    console.log('Run finished: completed');
  } else {
    ok(
      'POST /runs/{runId}/finish',
      await api.POST('/runs/{runId}/finish', {
        params: { path: { runId: run.runId } },
        body: { outcome: 'failed', summary: `Not sent: the decision was ${outcome}.` },
      }),
    );
    console.log('Run finished: failed');
  }

  // 7. The ledger, exported and checked here, then by the server.
  let previous = 'sha256:' + '0'.repeat(64);
  let count = 0;
  let from: string | undefined;
  for (;;) {
    const page = ok('GET /events/stream', await api.GET('/events/stream', { params: { query: { limit: 100, cursor: from } } }));
    for (const event of page.data) {
      const { eventHash, ...rest } = event;
      const problems = [
        event.previousHash !== previous && 'previousHash',
        sha256(canonicalize(event.payload)!) !== event.payloadDigest && 'payloadDigest',
        sha256(canonicalize(rest)!) !== eventHash && 'eventHash',
      ].filter(Boolean);
      if (problems.length > 0) throw new Error(`event ${event.sequence}: ${problems.join(', ')} do not verify`);
      previous = eventHash;
      count++;
    }
    from = page.meta.nextCursor ?? from;
    if (!page.meta.hasMore) break;
  }
  const report = ok('GET /ledger/verify', await api.GET('/ledger/verify')).data;
  if (!report.verified || report.head.hash !== previous) throw new Error(`the server's verification differs: ${JSON.stringify(report)}`);
  console.log(`Ledger verified: ${count} events, head ${previous}`);
}

/** The network error under a failed fetch (`fetch failed`, caused by ECONNREFUSED and the like), if that is what `err` is. */
function unreachable(err: unknown): string | null {
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause;
  return err instanceof TypeError && typeof cause?.code === 'string' ? cause.code : null;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    const code = unreachable(err);
    if (code) {
      // Say where it looked: the most common first-hour failure is a service at another address.
      console.error(
        `The agent stopped: no service answers at ${baseUrl} (${code}). Is npm start running? ` +
          'Set AWS_BASE_URL to the address its last line prints (Ready: open http://…) followed by /api/v1.',
      );
    } else console.error(`The agent stopped: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
