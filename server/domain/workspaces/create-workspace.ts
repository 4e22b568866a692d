/**
 * Creating a workspace: the tenant row, its ledger head, its owner (an existing user or a new one),
 * the owner's membership and the Inbox, each change recorded in the new workspace's own ledger.
 */
import { randomUUID } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { ledgerHeads, memberships, users, WORKSPACE_NAME_MAX, workspaces } from '@/db/schema';
import { AppError, hasSqlState } from '@/server/errors';
import { appendEvents } from '@/server/ledger/append';
import type { Actor, Trace } from '../actor';
import { createInitiativeTree } from '../initiatives/create-initiative';
import { inboxIds, membershipId } from './ids';

export interface CreateWorkspaceInput {
  name: string;
  /** The owner: an existing user (by email), or a new one, who then needs a password hash. */
  owner: { email: string; displayName: string; passwordHash?: string };
  /** A signed-in human creating it for themselves acts in its ledger; otherwise the system does. */
  byHuman?: boolean;
}

export interface CreatedWorkspace {
  workspaceId: string;
  /** The name as kept (trimmed). */
  name: string;
  ownerUserId: string;
  ownerCreated: boolean;
}

/**
 * A workspace name as kept: trimmed, 1 to 100 characters, no control characters. Unique without
 * regard to case (the database enforces it too: workspaces_name_lower_key).
 */
function workspaceName(raw: string): string {
  const name = raw.trim();
  if (name.length < 1 || name.length > WORKSPACE_NAME_MAX) {
    throw new AppError('validation_failed', `A workspace name has 1 to ${WORKSPACE_NAME_MAX} characters.`, {
      issues: [{ path: 'name', message: `1 to ${WORKSPACE_NAME_MAX} characters` }],
    });
  }
  if ([...name].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    throw new AppError('validation_failed', 'A workspace name cannot hold control characters.', {
      issues: [{ path: 'name', message: 'no control characters' }],
    });
  }
  return name;
}

/** The workspace named `name` in any case, if there is one. */
async function workspaceNamed(tx: Tx, name: string): Promise<{ id: string; name: string } | undefined> {
  const [row] = await tx
    .select({ id: workspaces.id, name: workspaces.name })
    .from(workspaces)
    .where(eq(sql`lower(${workspaces.name})`, name.trim().toLowerCase()))
    .limit(1);
  return row;
}

/** There is no actor inside a workspace that does not exist yet: the system acts, with the caller's trace. */
export async function createWorkspace(tx: Tx, trace: Trace, input: CreateWorkspaceInput): Promise<CreatedWorkspace> {
  const name = workspaceName(input.name);
  // Two creators racing for one name: the unique index refuses the second insert, which then
  // fails its transaction with the same answer as this check.
  const taken = await workspaceNamed(tx, name);
  if (taken) throw nameTaken(taken.name);
  const workspaceId = randomUUID();
  const email = input.owner.email.trim().toLowerCase();
  const [existing] = await tx.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1);
  const ownerUserId = existing?.id ?? randomUUID();

  const at = new Date();
  try {
    await tx.insert(workspaces).values({ id: workspaceId, name, createdAt: at });
  } catch (err) {
    // The other creator's name is not readable in this failed transaction; it matched in some case.
    if (hasSqlState(err, '23505')) throw nameTaken(null);
    throw err;
  }
  await tx.insert(ledgerHeads).values({ workspaceId });
  if (!existing) {
    if (!input.owner.passwordHash) throw new AppError('validation_failed', 'A new owner needs a password.');
    await tx
      .insert(users)
      .values({ id: ownerUserId, email, displayName: input.owner.displayName, passwordHash: input.owner.passwordHash, createdAt: at });
  }
  await tx.insert(memberships).values({ workspaceId, userId: ownerUserId, role: 'owner', createdAt: at });

  const actor: Actor = input.byHuman
    ? { type: 'human', id: ownerUserId, ownerId: ownerUserId, workspaceId, role: 'owner', trace }
    : { type: 'system', id: 'system:workspace-setup', ownerId: ownerUserId, workspaceId, trace };
  await appendEvents(
    tx,
    actor,
    [
      { aggregateType: 'workspace', aggregateId: workspaceId, eventType: 'workspace.created', payload: { name } },
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
  return { workspaceId, name, ownerUserId, ownerCreated: !existing };
}

/** Names the workspace that holds the name (its case may differ from what was typed). */
function nameTaken(existing: string | null): AppError {
  const which = existing === null ? 'with this name (in some letter case)' : `named "${existing}"`;
  return new AppError('conflict', `A workspace ${which} already exists. Choose another name.`, { field: 'name' });
}
