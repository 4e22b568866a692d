/** GET /workspaces/{workspace_id}/jwks.json: the public keys that verify the workspace's grants. */
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import { workspaces } from '@/db/schema';
import { workspaceJwks } from '@/server/domain/grants/jwks';
import { AppError } from '@/server/errors';
import { publicProcedure } from '../../trpc';
import { id } from '../../schemas';

const jwksOutput = z
  .object({
    keys: z.array(
      z.object({
        kty: z.literal('OKP'),
        crv: z.literal('Ed25519'),
        x: z.string().meta({ description: 'The 32-byte Ed25519 public key, base64url.' }),
        kid: z.string().meta({
          description:
            'The key id: the `kid` of the grants it signs, its RFC 7638 JWK thumbprint. No key here is a checkpoint key of GET /ledger/keys.',
        }),
        alg: z.literal('EdDSA'),
        use: z.literal('sig'),
      }),
    ),
  })
  .meta({ id: 'Jwks' });

export const jwksProcedure = publicProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/workspaces/{workspace_id}/jwks.json',
      tags: ['grants'],
      summary: 'The keys that verify the workspace’s grants (JWKS)',
      description:
        'A JSON Web Key Set (RFC 7517; OKP keys, RFC 8037), not the usual envelope, so that any JOSE library reads it. No ' +
        'credential needed, and cacheable for five minutes. Every key that may still verify a grant: the workspace’s ' +
        'current grant key and those retired less than a day ago; grant keys are never its checkpoint keys (GET ' +
        '/ledger/keys). A rotation (npm run ledger:rotate-key -- --grants) keeps the retired key here while a grant it ' +
        'signed may live. A workspace with no grant yet has none.',
      protect: false,
    },
    errorCodes: ['not_found'],
  })
  .input(z.strictObject({ workspace_id: id() }))
  .output(jwksOutput)
  .query(async ({ ctx, input }) => {
    const { db } = ctx.runtime;
    const [ws] = await db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.id, input.workspace_id));
    if (!ws) throw new AppError('not_found', 'No such workspace.');
    ctx.res.headers['Cache-Control'] = 'public, max-age=300';
    return workspaceJwks(db, ws.id);
  });
