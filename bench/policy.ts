/**
 * The decision-policy dry run (target: ≤ 1 s over 500 decided decisions): a workspace
 * gets 500 decisions ruled as people rule them (one approval, two under a policy of two, declines,
 * actions of three tools), through the services the API calls; then POST /decision-policy/dry-run
 * replays them under three proposed rules, over HTTP with a keep-alive client. Its baseline, in the
 * same run on the same server: GET /decisions?limit=100, a page of the same decisions.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { createDecision } from '@/server/domain/decisions/create-decision';
import { ruleOnDecision } from '@/server/domain/decisions/rule';
import { addMember } from '@/server/domain/workspaces/members';
import { parseEnv } from '@/server/env';
import { createRuntime, signingOf } from '@/server/runtime';
import { httpGet } from './ledger';
import { percentile, type BenchDb, type BenchWorkspace } from './lib';

const TOOLS = ['payments.send', 'deploy.prod', 'email.campaign'];

/** The proposed rules the dry run is given. */
const RULES = [
  { match: { tool: 'payments.*' }, policy: { approvals_required: 2 } },
  { match: { urgency: ['critical'] }, policy: { stages: [{ name: 'Lead' }, { name: 'Owner', approvers: { roles: ['owner'] } }] } },
  { match: { tool: 'deploy.*' }, policy: { approvals_required: 2, veto: false } },
];

/** Fills the workspace with `count` decided decisions; returns how long that took (s). */
export async function fillDecided(db: BenchDb, ws: BenchWorkspace, count: number): Promise<number> {
  const started = Date.now();
  const runtime = await createRuntime(parseEnv({ DATABASE_URL: db.url, SEED_DEMO: 'false', LOG_LEVEL: 'warn' }));
  try {
    const signing = signingOf(runtime);
    const people = await runtime.db.transaction(async (tx) => {
      const trace = systemTrace(randomUUID());
      const actor: Actor = { type: 'system', id: 'system:bench', ownerId: ws.workspaceId, workspaceId: ws.workspaceId, trace };
      const out: string[] = [];
      for (let i = 0; i < 3; i++) {
        const email = `approver-${i}-${ws.workspaceId.slice(0, 8)}@bench.local`;
        out.push((await addMember(tx, actor, { email, displayName: `Approver ${i}`, passwordHash: 'x', role: 'approver' })).userId);
      }
      return out;
    });
    const human = (id: string): Actor => ({
      type: 'human',
      id,
      ownerId: id,
      workspaceId: ws.workspaceId,
      role: 'approver',
      trace: systemTrace(randomUUID()),
    });
    const agent: Actor = {
      type: 'api_key',
      id: 'bench',
      ownerId: people[0]!,
      workspaceId: ws.workspaceId,
      trace: systemTrace(randomUUID()),
    };
    for (let i = 0; i < count; i++) {
      await runtime.db.transaction(async (tx) => {
        const two = i % 3 === 1;
        const decision = await createDecision(tx, agent, {
          title: `Decision ${i}`,
          shape: 'option_select',
          urgency: i % 5 === 0 ? 'critical' : 'urgent',
          blocks_task: false,
          on_timeout: 'expire',
          action: { tool: TOOLS[i % TOOLS.length]!, arguments: { n: i } },
          ...(two ? { policy: { approvals_required: 2 } } : {}),
        });
        const outcome = i % 3 === 2 ? 'declined' : 'approved';
        await ruleOnDecision(tx, human(people[i % 3]!), decision.id, { outcome }, signing);
        if (two) await ruleOnDecision(tx, human(people[(i + 1) % 3]!), decision.id, { outcome: 'approved' }, signing);
      });
    }
  } finally {
    await runtime.close();
  }
  return (Date.now() - started) / 1000;
}

function httpPost(agent: http.Agent, url: string, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Whether decision `i` of fillDecided would come out otherwise under RULES, worked out by hand:
 * i % 3 = 0 (payments, one approval) meets rule 0's two approvals no more; i % 3 = 1 (deploy, two
 * approvers) critical meets rule 1's second stage (an owner) no more, otherwise rule 2's two; i % 3
 * = 2 (email, one decline) stays declined under rule 1 (veto) and the default alike.
 */
function wouldChange(i: number): boolean {
  return i % 3 === 0 || (i % 3 === 1 && i % 5 === 0);
}

export interface DryRunFigures {
  /** POST /decision-policy/dry-run over the last 500 decided decisions: p50 and max, ms. */
  dryRun: { p50: number; max: number; decisions: number; wouldChange: number; wrong: number };
  /** GET /decisions?limit=100 on the same workspace: p50, ms. */
  page: { p50: number };
}

export async function measureDryRun(baseUrl: string, ws: BenchWorkspace, samples: number): Promise<DryRunFigures> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ rules: RULES, limit: 500 });
  try {
    const dry: number[] = [];
    const page: number[] = [];
    let last = { decisions: 0, wouldChange: 0, wrong: 0 };
    // Interleaved, so that the machine's swings touch both alike; the first of each warms up.
    for (let i = 0; i <= samples; i++) {
      let t = performance.now();
      const answer = await httpPost(agent, `${baseUrl}/api/v1/decision-policy/dry-run`, headers, body);
      if (answer.status !== 200) throw new Error(`dry run answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      if (i > 0) dry.push(performance.now() - t);
      const { data, totals } = JSON.parse(answer.body) as {
        data: { title: string; would_change: boolean }[];
        totals: { decisions: number; would_change: number };
      };
      // Exactly which: every answer checked against the hand-worked one.
      const wrong = data.filter((d) => d.would_change !== wouldChange(Number(d.title.replace('Decision ', '')))).length;
      last = { decisions: totals.decisions, wouldChange: totals.would_change, wrong };
      t = performance.now();
      const listed = await httpGet(agent, `${baseUrl}/api/v1/decisions?limit=100`, { authorization: headers.authorization });
      if (listed.status !== 200) throw new Error(`GET /decisions answered ${listed.status}`);
      if (i > 0) page.push(performance.now() - t);
    }
    return {
      dryRun: { p50: percentile(dry, 50), max: Math.max(...dry), ...last },
      page: { p50: percentile(page, 50) },
    };
  } finally {
    agent.destroy();
  }
}
