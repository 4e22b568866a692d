/** The schemas the procedures of runsRouter share, and the builder of those that act on one run. */
import { z } from 'zod';
import { runs, runStatuses } from '@/db/schema';
import type { MembershipRole } from '@/db/schema';
import { AppError } from '@/server/errors';
import { resourceProcedure } from '../../procedures';
import { DEFAULT_LEASE_SECONDS, MAX_LEASE_SECONDS, MIN_LEASE_SECONDS } from '@/server/domain/runs/lease';
import { id, jsonNumber, jsonObject, timestamp } from '../../schemas';

export const checkpointSchema = z
  .object({
    checkpointId: z.uuid(),
    runId: z.uuid(),
    position: z.int().min(1).meta({ description: '1 for the run’s first checkpoint, then +1.' }),
    label: z.string(),
    state: jsonObject().nullable(),
    created_at: timestamp(),
  })
  .meta({ id: 'RunCheckpoint' });

export const runSchema = z
  .object({
    runId: z.uuid(),
    status: z.enum(runStatuses),
    workspace_id: z.uuid(),
    task_id: z.uuid(),
    agent_id: z.string().nullable(),
    paused_for_decision_id: z.uuid().nullable().meta({ description: 'The blocking decision the run is paused for, if any.' }),
    checkpoint_id: z.uuid().nullable().meta({ description: 'The checkpoint the run was last rolled back to.' }),
    summary: z.string().nullable(),
    aggregateVersion: z.int().meta({ description: 'The run’s aggregateVersion in the ledger (+1 per event of the run).' }),
    created_at: timestamp(),
    updated_at: timestamp(),
    finished_at: timestamp().nullable(),
    fence: z.int().min(1).meta({
      description:
        'The run’s place among its task’s runs (1, 2, …): a fencing token that only grows. Pass it to systems your agent writes to, and let them refuse a smaller one than they have seen.',
    }),
    lease_seconds: z.int().meta({ description: 'How long a heartbeat or a checkpoint keeps the lease.' }),
    lease_expires_at: timestamp()
      .nullable()
      .meta({ description: 'When the lease lapses unless renewed; null unless the run is running (a paused run holds no lease).' }),
    failure_reason: z
      .enum(['lease_expired'])
      .nullable()
      .meta({ description: '`lease_expired` when the service failed the run because its lease lapsed; otherwise null.' }),
    artifact_ids: z.array(z.uuid()).meta({
      description:
        'The artifacts its agent named when it finished (POST /runs/{runId}/finish): what the run delivered (GET /artifacts/{id}).',
    }),
    checkpoints: z.array(checkpointSchema),
  })
  .meta({ id: 'Run' });

/** lease_seconds as a body takes it (POST /runs, POST /tasks/claim, heartbeats). */
export const leaseSecondsInput = () =>
  jsonNumber({ min: MIN_LEASE_SECONDS, max: MAX_LEASE_SECONDS, int: true }).meta({
    description: `How long the run's lease lasts without a heartbeat or a checkpoint: ${MIN_LEASE_SECONDS} to ${MAX_LEASE_SECONDS} seconds, default ${DEFAULT_LEASE_SECONDS}.`,
  });

export const runResponse = z.object({ ok: z.literal(true), data: runSchema }).meta({ id: 'RunResponse' });

export const runPath = z.strictObject({ runId: id() });

export const noSuchRun = () => new AppError('not_found', 'No such run in your workspace.');

/** Acting on the run the path names (`runId`): 404 for anyone outside its workspace. */
export const runProcedure = (roles?: readonly MembershipRole[]) => resourceProcedure(runs, 'runId', noSuchRun, roles);
