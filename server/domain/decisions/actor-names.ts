/**
 * Who the actors of some ledger events are, in words, as they are now: a human's display name, an
 * API key's name (only a key of this workspace). The same names a decision's history carries
 * (actorNameSql), for pages that list other events: the ledger, a task's history.
 */
import { and, eq, inArray } from 'drizzle-orm';
import type { Executor } from '@/db';
import { apiKeys, users } from '@/db/schema';

export interface ActorRef {
  actorType: string;
  actorId: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Names by `${actorType}:${actorId}`; an actor with no name (the system, a deleted key) is absent. */
export async function actorNames(db: Executor, workspaceId: string, refs: readonly ActorRef[]): Promise<Map<string, string>> {
  const idsOf = (type: string) => [...new Set(refs.filter((r) => r.actorType === type && UUID.test(r.actorId)).map((r) => r.actorId))];
  const humanIds = idsOf('human');
  const keyIds = idsOf('api_key');
  const [humans, keys] = await Promise.all([
    humanIds.length ? db.select({ id: users.id, name: users.displayName }).from(users).where(inArray(users.id, humanIds)) : [],
    keyIds.length
      ? db
          .select({ id: apiKeys.id, name: apiKeys.name })
          .from(apiKeys)
          .where(and(eq(apiKeys.workspaceId, workspaceId), inArray(apiKeys.id, keyIds)))
      : [],
  ]);
  return new Map([...humans.map((h) => [`human:${h.id}`, h.name] as const), ...keys.map((k) => [`api_key:${k.id}`, k.name] as const)]);
}
