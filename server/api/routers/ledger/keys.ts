/** GET /ledger/keys: the workspace's checkpoint signing keys, current and retired. */
import { z } from 'zod';
import { listSigningKeys } from '@/server/ledger/proofs';
import { agentProcedure } from '../../procedures';
import { apiMeta, timestamp } from '../../schemas';
import { workspaceOf, workspaceQuery } from './shared';

const keysOutput = z
  .object({
    data: z.array(
      z.object({
        name: z.string().meta({ description: 'The key name, which is the checkpoint origin: `<host>/workspaces/<id>`.' }),
        key_id: z
          .string()
          .regex(/^[0-9a-f]{8}$/)
          .meta({ description: 'First 4 bytes of SHA-256(name ‖ "\\n" ‖ 0x01 ‖ public key), hex.' }),
        vkey: z.string().meta({ description: 'The C2SP signed-note verifier key: `<name>+<key_id>+<base64(0x01 ‖ public key)>`.' }),
        algorithm: z.literal('ed25519'),
        public_key: z.string().meta({ description: 'The 32-byte Ed25519 public key, base64.' }),
        created_at: timestamp(),
        retired_at: timestamp().nullable().meta({ description: 'When a newer key replaced it; null for the current key.' }),
      }),
    ),
    meta: apiMeta,
  })
  .meta({ id: 'LedgerKeys' });

export const keysProcedure = agentProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/ledger/keys',
      tags: ['ledger'],
      summary: 'List the workspace’s checkpoint signing keys',
      description:
        'Each workspace signs its checkpoints with its own Ed25519 key, made when its first checkpoint is signed. A ' +
        'rotation (npm run ledger:rotate-key) retires the current key, which stays listed, and appends a ' +
        '`ledger.key_added` event naming the new one. Pin a vkey in your verifier or witness.',
    },
    errorCodes: ['not_found'],
  })
  .input(z.strictObject({ workspace_id: workspaceQuery }))
  .output(keysOutput)
  .query(async ({ ctx, actor, input }) => {
    const workspaceId = workspaceOf(actor, input.workspace_id);
    return { data: await listSigningKeys(ctx.runtime.db, workspaceId), meta: { apiVersion: '1' as const, workspaceId } };
  });
