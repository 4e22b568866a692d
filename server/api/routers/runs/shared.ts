/** The schemas the procedures of runsRouter share, and the builder of those that act on one run. */
import { z } from 'zod';
import { runs, runStatuses } from '@/db/schema';
import type { MembershipRole } from '@/db/schema';
import { AppError } from '@/server/errors';
import { resourceProcedure } from '../../procedures';
import { id, jsonObject, timestamp } from '../../schemas';

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
    checkpoints: z.array(checkpointSchema),
  })
  .meta({ id: 'Run' });

export const runResponse = z.object({ ok: z.literal(true), data: runSchema }).meta({ id: 'RunResponse' });

export const runPath = z.strictObject({ runId: id() });

export const noSuchRun = () => new AppError('not_found', 'No such run in your workspace.');

/** Acting on the run the path names (`runId`): 404 for anyone outside its workspace. */
export const runProcedure = (roles?: readonly MembershipRole[]) => resourceProcedure(runs, 'runId', noSuchRun, roles);
