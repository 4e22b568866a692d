/**
 * Ids derived from a workspace's id (UUIDv5), so finding these costs no lookup.
 *
 * Every workspace has an Inbox (an initiative, a workstream and a milestone, each named Inbox),
 * created with it; work without explicit placement lands there.
 */
import { v5 as uuidv5 } from 'uuid';

export interface InboxIds {
  initiativeId: string;
  workstreamId: string;
  milestoneId: string;
}

/** A membership's aggregate id: one per (workspace, user), stable, distinct from the user's id. */
export function membershipId(workspaceId: string, userId: string): string {
  return uuidv5(`membership/${userId}`, workspaceId);
}

/**
 * Remembered per workspace: every POST /work without placement needs them, and three UUIDv5s
 * (three SHA-1s and their parsing) were ~2% of that request's CPU. Bounded: once full it starts
 * over, which costs only the recomputation.
 */
const inboxes = new Map<string, InboxIds>();
const INBOXES_KEPT = 10_000;

export function inboxIds(workspaceId: string): InboxIds {
  let ids = inboxes.get(workspaceId);
  if (!ids) {
    if (inboxes.size >= INBOXES_KEPT) inboxes.clear();
    ids = Object.freeze({
      initiativeId: uuidv5('inbox/initiative', workspaceId),
      workstreamId: uuidv5('inbox/workstream', workspaceId),
      milestoneId: uuidv5('inbox/milestone', workspaceId),
    });
    inboxes.set(workspaceId, ids);
  }
  return ids;
}
