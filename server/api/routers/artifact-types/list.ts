/** GET /artifact-types: the global catalog, cacheable for five minutes. */
import { z } from 'zod';
import { readCatalog } from '@/server/domain/artifact-types/catalog';
import { authenticatedProcedure } from '../../trpc';
import { noneMatchHits } from '../../conditional';

const artifactTypeSchema = z
  .object({
    type_code: z.string().meta({ description: 'The value used as artifact_type when registering produced work.' }),
    label: z.string(),
    summary: z.string(),
    domain: z.string(),
    stage: z.string(),
    workflow: z.string(),
    default_persona: z.string(),
    tags: z.array(z.string()),
    is_deliverable: z.boolean().meta({ description: 'False for types that describe run health rather than a produced deliverable.' }),
  })
  .meta({ id: 'ArtifactType' });

export const listProcedure = authenticatedProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/artifact-types',
      tags: ['artifact-types'],
      summary: 'The global catalog of artifact types',
      description:
        'The same for every caller and read-only; takes no workspace parameter. Cacheable for five minutes ' +
        '(Cache-Control: max-age=300) with an ETag: a request whose If-None-Match names it gets 304. meta.stale is ' +
        'true when the catalog is served from the last good load because a refresh failed.',
    },
    auth: ['ApiKey', 'Session'],
    otherSuccess: { 304: 'Not modified: the ETag in If-None-Match is current.' },
    successHeaders: {
      ETag: 'A strong validator of the catalog.',
      'Cache-Control': 'max-age=300',
    },
  })
  .input(z.strictObject({}))
  .output(
    z
      .object({
        data: z.array(artifactTypeSchema),
        meta: z.object({ apiVersion: z.literal('1'), scope: z.literal('global'), count: z.int(), stale: z.boolean() }),
      })
      .meta({ id: 'ArtifactTypeCatalog' }),
  )
  .query(async ({ ctx }) => {
    const catalog = await readCatalog(ctx.runtime.db);
    ctx.res.headers.ETag = catalog.etag;
    ctx.res.headers['Cache-Control'] = 'max-age=300';
    if (noneMatchHits(ctx.headers.get('if-none-match'), catalog.etag)) ctx.res.status = 304;
    return {
      data: catalog.types,
      meta: { apiVersion: '1' as const, scope: 'global' as const, count: catalog.types.length, stale: catalog.stale },
    };
  });
