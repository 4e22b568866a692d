/**
 * Who is acting, on whose behalf, and the trace of the request that carries the action.
 * Services receive an Actor; every ledger event records its type, id, owner and trace. The service
 * itself acting (a job, a key rotation) is a `system` actor on behalf of the workspace's owner.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { memberships, type MembershipRole } from '@/db/schema';
import { digestOf } from '@/server/ledger/canonical';

type ActorType = 'api_key' | 'human' | 'system';

export interface Trace {
  /** The request that caused the change: every event it appends has this causationId. */
  requestId: string;
  /** Groups the events of one piece of work across requests (X-Correlation-Id, else the request id). */
  correlationId: string;
  idempotencyKey: string | null;
  /** Digest of the context the agent acted on (X-Context-Manifest-Digest), else of the empty manifest {}. */
  contextManifestDigest: string;
}

export interface Actor {
  type: ActorType;
  /** API key id, user id, or `system:<job>`. */
  id: string;
  /** The human accountable for the action: the key's owner, the user, or the workspace owner for system jobs. */
  ownerId: string;
  workspaceId: string;
  /** Set for humans acting through a session. */
  role?: MembershipRole;
  trace: Trace;
}

export const EMPTY_CONTEXT_MANIFEST_DIGEST = digestOf({});

export function systemTrace(requestId: string): Trace {
  return {
    requestId,
    correlationId: requestId,
    idempotencyKey: null,
    contextManifestDigest: EMPTY_CONTEXT_MANIFEST_DIGEST,
  };
}

async function workspaceOwner(tx: Tx, workspaceId: string): Promise<string> {
  const [owner] = await tx
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.role, 'owner')))
    .orderBy(asc(memberships.createdAt))
    .limit(1);
  if (!owner) throw new Error(`workspace ${workspaceId} has no owner`);
  return owner.userId;
}

/** The service itself acting in a workspace (`id`: `system:<job>`), on behalf of its owner. */
export async function systemActor(tx: Tx, workspaceId: string, id: string): Promise<Actor> {
  return { type: 'system', id, ownerId: await workspaceOwner(tx, workspaceId), workspaceId, trace: systemTrace(randomUUID()) };
}
