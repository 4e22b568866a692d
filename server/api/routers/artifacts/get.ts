/** GET /artifacts/{id}: Read an artifact. */
import { z } from 'zod';
import { findArtifact } from '@/server/domain/artifacts/artifacts';
import { artifactPath, artifactProcedure, artifactSchema, noSuchArtifact } from './shared';
import { artifactView } from '@/server/domain/artifacts/view';

export const getProcedure = artifactProcedure()
  .meta({
    openapi: {
      method: 'GET',
      path: '/artifacts/{id}',
      tags: ['artifacts'],
      summary: 'Read an artifact',
      description:
        'The artifact as registered: type, title, links, media type, digest and size, and where its bytes are. 404 for another workspace’s.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found'],
  })
  .input(artifactPath)
  .output(z.object({ ok: z.literal(true), data: artifactSchema }).meta({ id: 'ArtifactRead' }))
  .query(async ({ ctx, input, actor }) => {
    const row = await findArtifact(ctx.runtime.db, actor.workspaceId, input.id);
    if (!row) throw noSuchArtifact();
    return { ok: true as const, data: artifactView(row) };
  });
