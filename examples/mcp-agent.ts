/**
 * An agent that meets the service only through MCP, with the SDK's own client: the loop any
 * MCP-capable agent (Claude Code, Cursor, the OpenAI Agents SDK …) runs with the same tools.
 *
 *   npm start                                      # prints the demo workspace's API key
 *   AWS_API_KEY=awk_… npx tsx examples/mcp-agent.ts
 *
 * Environment: AWS_API_KEY (required), AWS_MCP_URL (default http://127.0.0.1:3000/mcp). It prints
 * what it does, one line a step; "Waiting for a ruling: <url>" names the page where a signed-in
 * human approves or declines. Exit status 0 when the run finished and the ledger verifies, 1
 * otherwise.
 *
 * The steps, each one tool call:
 * 1. create_initiative: a small plan of its own (a workstream with a milestone), so the claim
 *    below takes this agent's task and no other.
 * 2. create_work: the task, placed in that plan.
 * 3. claim_task: the next ready task of the plan (the one just made), its run started with a lease.
 * 4. checkpoint: progress, which renews the lease.
 * 5. request_decision with wait_seconds: raises the question and waits for the ruling, the run
 *    paused meanwhile (blocks_task), reporting progress.
 * 6. Approved: resume_run (a new lease) and finish_run completed. Otherwise finish_run failed.
 * 7. verify_ledger: the workspace's hash chain, checked by the service.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

const apiKey = process.env.AWS_API_KEY;
if (!apiKey) {
  console.error('Set AWS_API_KEY to a workspace API key (npm start prints the demo workspace’s).');
  process.exit(1);
}
const url = new URL(process.env.AWS_MCP_URL ?? 'http://127.0.0.1:3000/mcp');

const client = new Client({ name: 'aws-example-mcp-agent', version: '1' });

/** Calls a tool; its structured answer, or the service's error stops the agent. */
async function tool<T>(name: string, args: Record<string, unknown>, onprogress?: (message: string) => void): Promise<T> {
  const result = (await client.callTool(
    { name, arguments: args },
    undefined,
    // A wait of up to wait_seconds: each progress notification restarts the client's own timeout.
    { timeout: 60_000, resetTimeoutOnProgress: true, onprogress: (p) => p.message && onprogress?.(p.message) },
  )) as CallToolResult;
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.structuredContent ?? result.content)}`);
  return result.structuredContent as T;
}

async function main(): Promise<void> {
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }));
  const { tools } = await client.listTools();
  console.log(`Connected to ${url.href}: ${tools.length} tools`);

  // 1. A plan of its own.
  const stamp = new Date().toISOString();
  const plan = await tool<{ data: { initiative: { id: string }; refs: Record<string, string> } }>('create_initiative', {
    title: `Credential rotation (MCP example agent, ${stamp})`,
    workstreams: [{ ref: 'ops', name: 'Operations', milestones: [{ ref: 'rotated', title: 'Credentials rotated' }] }],
  });
  const initiativeId = plan.data.initiative.id;

  // 2. The work.
  const work = await tool<{ data: { taskId: string } }>('create_work', {
    title: 'Rotate the staging database password',
    description: 'The password is older than 90 days.',
    priority: 'high',
    initiative_id: initiativeId,
    workstream_id: plan.data.refs.ops,
    milestone_id: plan.data.refs.rotated,
    idempotency_key: `mcp-example-${stamp}`,
  });
  console.log(`Work created: ${work.data.taskId}`);

  // 3. The claim: the plan's one ready task, and a run with a lease.
  const claim = await tool<{ data: { task: { id: string; title: string }; run: { runId: string; lease_expires_at: string } } | null }>(
    'claim_task',
    { agent_id: 'mcp-example-agent', filters: { initiative_id: initiativeId }, lease_seconds: 120 },
  );
  if (!claim.data) throw new Error('claim_task: nothing was ready');
  const { task, run } = claim.data;
  if (task.id !== work.data.taskId) throw new Error(`claim_task took ${task.id}, not the task just made`);
  console.log(`Claimed: ${task.title}, run ${run.runId}, lease until ${run.lease_expires_at}`);

  // 4. Progress.
  await tool('checkpoint', { runId: run.runId, label: 'new password generated', state: { vault_path: 'staging/db' } });
  console.log('Checkpoint recorded: new password generated');

  // 5. The question, and the wait for its ruling.
  let shown = false;
  const ruled = await tool<{ decision: { id: string; status: string }; wait: { ended: string } }>(
    'request_decision',
    {
      title: 'Rotate the staging database password now?',
      description: 'Connections reconnect within a minute; the staging app is down meanwhile.',
      urgency: 'urgent',
      task_id: task.id,
      run_id: run.runId,
      blocks_task: true,
      wait_seconds: 120,
      idempotency_key: `mcp-example-decision-${stamp}`,
    },
    (message) => {
      // The first progress names the page where a human rules.
      if (shown) return;
      shown = true;
      const page = /(https?:\/\/\S+\/decisions\/\S+)/.exec(message)?.[1];
      console.log(`Waiting for a ruling: ${page ?? message}`);
    },
  );
  console.log(`Ruling: ${ruled.decision.status} (wait ${ruled.wait.ended})`);

  // 6. Carry on, or stop.
  if (ruled.decision.status === 'approved') {
    await tool('resume_run', { runId: run.runId, reason: 'approved' });
    await tool('finish_run', { runId: run.runId, outcome: 'completed', summary: 'Password rotated; the app reconnected.' });
    console.log('Run finished: completed');
  } else {
    await tool('finish_run', { runId: run.runId, outcome: 'failed', summary: `Not rotated: the decision is ${ruled.decision.status}.` });
    console.log('Run finished: failed');
  }

  // 7. The ledger.
  const verified = await tool<{ data: { verified: boolean; head: { sequence: number; hash: string } } }>('verify_ledger', {});
  if (!verified.data.verified) throw new Error('verify_ledger: the chain does not verify');
  console.log(`Ledger verified: ${verified.data.head.sequence} events, head ${verified.data.head.hash}`);
}

main()
  .then(() => client.close())
  .catch(async (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    await client.close().catch(() => undefined);
    process.exit(1);
  });
