/**
 * Every workspace has an Inbox (an initiative, a workstream and a milestone, each named Inbox),
 * created with it. Their ids are derived from the workspace id (UUIDv5), so placing work in the
 * Inbox costs no lookup.
 */
import { v5 as uuidv5 } from 'uuid';

export interface InboxIds {
  initiativeId: string;
  workstreamId: string;
  milestoneId: string;
}

export function inboxIds(workspaceId: string): InboxIds {
  return {
    initiativeId: uuidv5('inbox/initiative', workspaceId),
    workstreamId: uuidv5('inbox/workstream', workspaceId),
    milestoneId: uuidv5('inbox/milestone', workspaceId),
  };
}
