/** DELETE /artifacts/{id}/content: Remove an artifact's stored bytes. */
import { z } from 'zod';
import { deleteArtifactContent } from '@/server/domain/artifacts/artifacts';
import { artifactView } from '@/server/domain/artifacts/view';
import { resourceProcedure } from '../../procedures';
import { OWNERS } from '../../trpc';
import { artifacts } from '@/db/schema';
import { artifactPath, artifactSchema, noSuchArtifact } from './shared';

export const deleteContentProcedure = resourceProcedure(artifacts, 'id', noSuchArtifact, OWNERS)
  .meta({
    openapi: {
      method: 'DELETE',
      path: '/artifacts/{id}/content',
      tags: ['artifacts'],
      summary: 'Remove an artifact’s stored bytes',
      description:
        'Owners (and API keys) remove the bytes the service stores for an artifact, and with them those of every artifact ' +
        'of the workspace holding the same bytes (they are stored once): each gets `content_removed_at` and an ' +
        '`artifact.content_removed` event. The artifact and its digest stay, in the table and in the ledger, so a copy ' +
        'kept elsewhere still checks against them. Removing them again changes nothing (200, no event). 404 for an ' +
        'artifact registered by `uri` (its bytes were never here) and for another workspace’s.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found', 'forbidden'],
  })
  .input(artifactPath)
  .output(z.object({ ok: z.literal(true), data: artifactSchema }).meta({ id: 'ArtifactContentRemoved' }))
  .mutation(({ input, actor, write }) =>
    write(async (tx) => ({ ok: true as const, data: artifactView(await deleteArtifactContent(tx, actor, input.id)) })),
  );
