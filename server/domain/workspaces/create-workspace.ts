/**
 * Creating a workspace: the tenant row, its ledger head, its owner (an existing user or a new one),
 * the owner's membership and the Inbox, each change recorded in the new workspace's own ledger.
 */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { ledgerHeads, memberships, users, workspaces } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import type { Actor, Trace } from '../actor';
import { createInitiativeTree } from '../initiatives/create-initiative';
import { inboxIds, membershipId } from './ids';

export interface CreateWorkspaceInput {
  name: string;
  owner: { email: string; displayName: string; passwordHash: string };
}

export interface CreatedWorkspace {
  workspaceId: string;
  ownerUserId: string;
  ownerCreated: boolean;
}

/** There is no actor inside a workspace that does not exist yet: the system acts, with the caller's trace. */
export async function createWorkspace(tx: Tx, trace: Trace, input: CreateWorkspaceInput): Promise<CreatedWorkspace> {
  const workspaceId = randomUUID();
  const email = input.owner.email.trim().toLowerCase();
  const [existing] = await tx.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1);
  const ownerUserId = existing?.id ?? randomUUID();

  const at = new Date();
  await tx.insert(workspaces).values({ id: workspaceId, name: input.name, createdAt: at });
  await tx.insert(ledgerHeads).values({ workspaceId });
  if (!existing) {
    await tx.insert(users).values({ id: ownerUserId, email, displayName: input.owner.displayName, passwordHash: input.owner.passwordHash });
  }
  await tx.insert(memberships).values({ workspaceId, userId: ownerUserId, role: 'owner' });

  const actor: Actor = { type: 'system', id: 'system:workspace-setup', ownerId: ownerUserId, workspaceId, trace };
  await appendEvents(
    tx,
    actor,
    [
      { aggregateType: 'workspace', aggregateId: workspaceId, eventType: 'workspace.created', payload: { name: input.name } },
      {
        aggregateType: 'membership',
        aggregateId: membershipId(workspaceId, ownerUserId),
        eventType: 'membership.created',
        // Who the member is, for readers of the ledger; the password hash never enters it.
        payload: { user_id: ownerUserId, email, display_name: input.owner.displayName, role: 'owner', user_created: !existing },
      },
    ],
    at,
  );

  // The Inbox is an initiative like any other, with ids derived from the workspace.
  const inbox = inboxIds(workspaceId);
  const ids = [inbox.initiativeId, inbox.workstreamId, inbox.milestoneId];
  await createInitiativeTree(
    tx,
    actor,
    {
      title: 'Inbox',
      summary: 'Work created without explicit placement lands here.',
      visibility: 'workspace',
      model_tier: 'standard',
      execution_policy: { mode: 'manual', max_concurrent_agents: 1 },
      workstreams: [{ name: 'Inbox', milestones: [{ title: 'Inbox' }] }],
    },
    { isInbox: true, at, newId: () => ids.shift()! },
  );
  return { workspaceId, ownerUserId, ownerCreated: !existing };
}
