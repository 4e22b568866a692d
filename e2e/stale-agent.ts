/**
 * An agent that writes while it believes it holds its task (e2e/lease-fencing.spec.ts): it claims
 * the ready task of the initiative AWS_INITIATIVE with a lease of AWS_LEASE_SECONDS, then records a
 * checkpoint every 300 ms under withLease (heartbeats at a third of the lease) until a write is
 * refused or the lease is lost, and then tries to finish the run. It prints one line a step. The
 * test stops it (SIGSTOP) mid-work and wakes it once its task has gone to another agent.
 */
import { createAwsClient, LeaseLostError } from '../clients/typescript';

const aws = createAwsClient({ baseUrl: process.env.AWS_BASE_URL!, apiKey: process.env.AWS_API_KEY! });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const codeOf = (error: unknown) => (error as { error?: { code?: string } } | undefined)?.error?.code ?? '';

const claimed = await aws.claim({
  agentId: 'stale-agent',
  filters: { initiative_id: process.env.AWS_INITIATIVE! },
  leaseSeconds: Number(process.env.AWS_LEASE_SECONDS),
});
if (!claimed) throw new Error('nothing to claim');
const { run } = claimed;
console.log(`claimed ${run.runId} fence ${run.fence}`);
try {
  await aws.withLease(run, async (signal) => {
    for (let n = 1; !signal.aborted; n++) {
      const written = await aws.api.POST('/runs/{runId}/checkpoints', {
        params: { path: { runId: run.runId } },
        body: { label: `step ${n}` },
      });
      if (written.error) {
        console.log(`checkpoint refused ${written.response.status} ${codeOf(written.error)}`);
        return;
      }
      console.log(`checkpoint ok ${n}`);
      await sleep(300);
    }
  });
} catch (err) {
  if (!(err instanceof LeaseLostError)) throw err;
  console.log(`lease lost ${err.code}`);
}
const finished = await aws.api.POST('/runs/{runId}/finish', { params: { path: { runId: run.runId } }, body: { outcome: 'completed' } });
console.log(`finish ${finished.response.status} ${codeOf(finished.error)}`);
