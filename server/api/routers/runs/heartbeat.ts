/** POST /runs/{runId}/heartbeat: Renew a run's lease. */
import { z } from 'zod';
import { runStatuses } from '@/db/schema';
import { heartbeat } from '@/server/domain/runs/runs';
import { OWNERS } from '../../trpc';
import { mutationHeaders, timestamp } from '../../schemas';
import { leaseSecondsInput, runPath, runProcedure } from './shared';

const heartbeatResponse = z
  .object({
    ok: z.literal(true),
    data: z
      .object({
        runId: z.uuid(),
        status: z.enum(runStatuses),
        fence: z.int().min(1),
        lease_seconds: z.int(),
        lease_expires_at: timestamp().meta({
          description: 'The new end of the lease: heartbeat again before it (at a third of lease_seconds).',
        }),
        aggregateVersion: z.int(),
      })
      .meta({ id: 'RunLease' }),
  })
  .meta({ id: 'RunLeaseResponse' });

export const heartbeatProcedure = runProcedure(OWNERS)
  .meta({
    openapi: {
      method: 'POST',
      path: '/runs/{runId}/heartbeat',
      tags: ['runs'],
      summary: 'Renew a run’s lease',
      description:
        'Keeps a running run’s lease for `lease_seconds` from now (the run’s own, or the one sent, which the run keeps ' +
        'from then on), and answers the new `lease_expires_at`. Each heartbeat is one `run.lease_renewed` ledger event, ' +
        'so the ledger shows who held the task until when. Checkpoints renew the lease too. A run that is not running ' +
        'holds no lease: 409 invalid_state_transition. Once the lease has lapsed the run is the service’s: 409 ' +
        'lease_expired, and nothing is written; stop working on the task and claim again.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found', 'forbidden', 'invalid_state_transition', 'lease_expired', 'invalid_idempotency_key'],
  })
  .input(runPath.extend({ lease_seconds: leaseSecondsInput().optional() }))
  .output(heartbeatResponse)
  .mutation(({ input, actor, write }) => {
    const { runId, ...body } = input;
    return write(async (tx) => ({ ok: true as const, data: await heartbeat(tx, actor, runId, body) }));
  });
