/**
 * The signed tree under load: how long a commit waits for a checkpoint that covers it
 * while POST /work runs (checkpoint lag), and how fast inclusion and consistency proofs are read
 * from a 1,000,000-event tree, beside a one-row read of the same API as the baseline.
 */
import http from 'node:http';
import postgres from 'postgres';
import { httpGet } from './ledger';
import { percentile, type BenchDb, type BenchWorkspace } from './lib';

export interface LagFigures {
  samples: number;
  p50: number;
  p99: number;
  max: number;
  /** Heads seen that no checkpoint had covered when the poll gave up (10 s after the load). */
  uncovered: number;
}

/**
 * Polls the heads of `workspaceIds` and their newest checkpoints every `everyMs` while `during`
 * runs: each head seen is a commit that happened by then, and its lag is the time until a
 * checkpoint of that size or more is seen (so ± one poll). After the load, polls until every head
 * seen is covered, for at most 10 s.
 */
export async function measureCheckpointLag<T>(
  dbUrl: string,
  workspaceIds: string[],
  during: Promise<T>,
  everyMs = 100,
): Promise<{ result: T; lag: LagFigures }> {
  const sql = postgres(dbUrl, { max: 1, onnotice: () => undefined });
  const pending: { workspaceId: string; size: number; at: number }[] = [];
  const lastSeen = new Map<string, number>();
  const lags: number[] = [];
  let done = false;
  const finished = during.finally(() => (done = true));
  let giveUpAt = Infinity;
  try {
    for (;;) {
      const now = performance.now();
      const rows = await sql<{ workspace_id: string; sequence: string; signed: string }[]>`
        select h.workspace_id, h.sequence,
               coalesce((select max(c.tree_size) from ledger_checkpoints c where c.workspace_id = h.workspace_id), 0) as signed
          from ledger_heads h where h.workspace_id = any(${workspaceIds}::uuid[])`;
      for (const row of rows) {
        const signed = Number(row.signed);
        for (let i = pending.length - 1; i >= 0; i--) {
          const p = pending[i]!;
          if (p.workspaceId === row.workspace_id && p.size <= signed) {
            lags.push(now - p.at);
            pending.splice(i, 1);
          }
        }
        const size = Number(row.sequence);
        if (!done && size > (lastSeen.get(row.workspace_id) ?? 0) && size > signed) {
          pending.push({ workspaceId: row.workspace_id, size, at: now });
          lastSeen.set(row.workspace_id, size);
        }
      }
      if (done && giveUpAt === Infinity) giveUpAt = now + 10_000;
      if (done && (pending.length === 0 || now > giveUpAt)) break;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    return {
      result: await finished,
      lag: {
        samples: lags.length,
        p50: percentile(lags, 50),
        p99: percentile(lags, 99),
        max: Math.max(0, ...lags),
        uncovered: pending.length,
      },
    };
  } finally {
    await sql.end();
  }
}

/** Waits until the newest checkpoint of `workspace` covers its head; the seconds it took. */
export async function waitForTree(db: BenchDb, workspace: BenchWorkspace, timeoutMs = 600_000): Promise<number> {
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
  const started = performance.now();
  try {
    for (;;) {
      const [row] = await sql<{ head: string; signed: string | null }[]>`
        select h.sequence as head, (select max(tree_size) from ledger_checkpoints c where c.workspace_id = h.workspace_id) as signed
          from ledger_heads h where h.workspace_id = ${workspace.workspaceId}`;
      if (row && row.signed !== null && Number(row.signed) >= Number(row.head)) return (performance.now() - started) / 1000;
      if (performance.now() - started > timeoutMs) throw new Error(`the tree did not reach the head within ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await sql.end();
  }
}

export interface ProofFigures {
  treeSize: number;
  /** p50 and p99 in ms, one request at a time over a keep-alive connection. */
  inclusion: { p50: number; p99: number };
  consistency: { p50: number; p99: number };
  /** GET /ledger/keys: a one-row read through the same stack, the baseline. */
  baseline: { p50: number; p99: number };
}

/** `samples` inclusion proofs (random sequences) and consistency proofs (random sizes) of the newest checkpoint, and the baseline. */
export async function measureProofs(baseUrl: string, workspace: BenchWorkspace, samples: number): Promise<ProofFigures> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { authorization: `Bearer ${workspace.apiKey}`, accept: 'application/json' };
  try {
    const checkpoint = await httpGet(agent, `${baseUrl}/api/v1/ledger/checkpoint`, headers);
    if (checkpoint.status !== 200) throw new Error(`GET /ledger/checkpoint: ${checkpoint.status} ${checkpoint.body}`);
    const size = (JSON.parse(checkpoint.body) as { data: { tree_size: number } }).data.tree_size;
    const timed = async (url: () => string) => {
      const times: number[] = [];
      // A few unmeasured first, so the first sample does not pay for cold code.
      for (let i = 0; i < samples + 20; i++) {
        const t0 = performance.now();
        const res = await httpGet(agent, url(), headers);
        const ms = performance.now() - t0;
        if (res.status !== 200) throw new Error(`${url()}: ${res.status} ${res.body}`);
        if (i >= 20) times.push(ms);
      }
      return { p50: percentile(times, 50), p99: percentile(times, 99) };
    };
    const any = (n: number) => 1 + Math.floor(Math.random() * n);
    return {
      treeSize: size,
      baseline: await timed(() => `${baseUrl}/api/v1/ledger/keys`),
      inclusion: await timed(() => `${baseUrl}/api/v1/ledger/proofs/inclusion?sequence=${any(size)}`),
      consistency: await timed(() => `${baseUrl}/api/v1/ledger/proofs/consistency?from=${any(size - 1)}`),
    };
  } finally {
    agent.destroy();
  }
}
