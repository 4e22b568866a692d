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

export function inboxIds(workspaceId: string): InboxIds {
  return {
    initiativeId: uuidv5('inbox/initiative', workspaceId),
    workstreamId: uuidv5('inbox/workstream', workspaceId),
    milestoneId: uuidv5('inbox/milestone', workspaceId),
  };
}
