/** What the ledger's signed-tree reads share: the workspace they read, and how it is named. */
import { z } from 'zod';
import type { Actor } from '@/server/domain/actor';
import { AppError } from '@/server/errors';
import { queryInteger } from '../../schemas';

/** An API key reads its own workspace; naming another is 404, as for any resource outside it. */
export const workspaceQuery = z.uuid().optional().meta({ description: 'The API key’s own workspace (the default). Any other is 404.' });

export function workspaceOf(actor: Actor, named: string | undefined): string {
  if (named !== undefined && named.toLowerCase() !== actor.workspaceId)
    throw new AppError('not_found', 'No such workspace for this API key.');
  return actor.workspaceId;
}

/** A tree size or sequence in a query: a positive integer in plain decimal digits. */
export const treeIndex = (description: string) => queryInteger({ min: 1, max: Number.MAX_SAFE_INTEGER }).meta({ description });

export const HASHES =
  'Hashes are standard base64 of 32 bytes, as in C2SP checkpoints. Leaf i is the event at sequence i + 1, its hash ' +
  'SHA-256(0x00 ‖ the 32 bytes of its eventHash); an interior node is SHA-256(0x01 ‖ left ‖ right) (RFC 9162).';
