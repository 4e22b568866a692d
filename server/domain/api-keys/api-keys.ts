/** Creating and revoking API keys: each is a ledger event; the secret is returned once and never stored. */
import { randomUUID } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import type { Tx } from '@/db';
import { apiKeys } from '@/db/schema';
import { generateApiKey } from '@/server/auth/api-keys';
import { appendEvents } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';

export interface CreatedApiKey {
  id: string;
  name: string;
  prefix: string;
  workspaceId: string;
  /** The whole key. Shown once; only its hash is kept. */
  secret: string;
}

/** Creates a key in the actor's workspace, owned by `ownerUserId` (default: the actor's owner). */
export async function createApiKey(tx: Tx, actor: Actor, input: { name: string; ownerUserId?: string }): Promise<CreatedApiKey> {
  const id = randomUUID();
  const key = generateApiKey();
  const ownerUserId = input.ownerUserId ?? actor.ownerId;
  // The row and its event carry the same time (a restore gives the row the event's).
  const now = new Date();
  await tx.insert(apiKeys).values({
    id,
    workspaceId: actor.workspaceId,
    ownerUserId,
    name: input.name,
    prefix: key.prefix,
    secretHash: key.hash,
    createdAt: now,
  });
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'api_key',
        aggregateId: id,
        eventType: 'api_key.created',
        payload: { id, name: input.name, prefix: key.prefix, owner_user_id: ownerUserId },
      },
    ],
    now,
  );
  return { id, name: input.name, prefix: key.prefix, workspaceId: actor.workspaceId, secret: key.secret };
}

/** Revokes a key of the actor's workspace. Revoking a revoked key changes nothing and appends nothing. */
export async function revokeApiKey(tx: Tx, actor: Actor, input: { keyId: string }): Promise<{ revoked: boolean }> {
  const [updated] = await tx
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, input.keyId), eq(apiKeys.workspaceId, actor.workspaceId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id, prefix: apiKeys.prefix });
  if (!updated) {
    const [existing] = await tx
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(and(eq(apiKeys.id, input.keyId), eq(apiKeys.workspaceId, actor.workspaceId)));
    if (!existing) throw new AppError('not_found', 'No such API key in this workspace.');
    return { revoked: false };
  }
  await appendEvents(tx, actor, [
    {
      aggregateType: 'api_key',
      aggregateId: updated.id,
      eventType: 'api_key.revoked',
      payload: { id: updated.id, prefix: updated.prefix },
    },
  ]);
  return { revoked: true };
}
