/** GET /operating-map: The operating map, rebuilt from the ledger. */
import { z } from 'zod';
import { operatingMap } from '@/server/domain/operating-map/map';
import { withReplayed } from '@/server/projections/replay-cache';
import { memberProcedure } from '../../procedures';
import { id, queryIntegerOr } from '../../schemas';
import { mapOutput } from './map-schemas';

export const operatingMapProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/operating-map',
      tags: ['initiatives'],
      summary: 'The operating map, rebuilt from the ledger',
      description:
        'Processes (one per initiative), their stages, handoffs and evidence, computed from ledger events alone — ' +
        'never from the projection tables. meta says how much was replayed and up to which ledger head.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden'],
  })
  .input(
    z.strictObject({
      limit: queryIntegerOr(50, { min: 1, max: 200 }).meta({
        description: 'Process aggregates to replay and return, 1 to 200, default 50 (newest first).',
      }),
      workspace_id: id().optional(),
      initiative_id: id()
        .optional()
        .meta({ description: 'Only the process of this initiative (empty when it has none in the workspace).' }),
    }),
  )
  .output(mapOutput)
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    return withReplayed(ctx.runtime.db, workspaceId, (replay) => {
      const { aggregateIds, ...data } = operatingMap(replay.state, input.limit, input.initiative_id);
      let events = 0;
      for (const aggregate of aggregateIds) events += replay.eventsByAggregate.get(aggregate) ?? 0;
      return {
        data,
        meta: {
          apiVersion: '1' as const,
          workspaceId,
          // A count of the whole beyond the page is the envelope's (docs/contract.md §10.4); data keeps it until version 2.
          totalProcesses: data.totalProcesses,
          projectionStatus: 'replayed' as const,
          replayedAggregates: aggregateIds.size,
          replayedEvents: events,
          ledgerHead: replay.head,
          rebuiltAt: new Date().toISOString(),
        },
      };
    });
  });
