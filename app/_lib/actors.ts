/** Who did what on the pages that list ledger events: every actor named the one way (event-words.ts). */
import 'server-only';
import { actorNames, type ActorRef } from '@/server/domain/decisions/actor-names';
import { getRuntime } from '@/server/runtime';
import { actorLabel } from './event-words';

/**
 * A labeller for the actors of `events` (already read by a member of `workspaceId`): one query for
 * all their names.
 */
export async function actorLabels(workspaceId: string, events: readonly ActorRef[]): Promise<(e: ActorRef) => string> {
  const names = await actorNames((await getRuntime()).db, workspaceId, events);
  return (e) => actorLabel(e.actorType, names.get(`${e.actorType}:${e.actorId}`) ?? null);
}
