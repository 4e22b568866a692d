/**
 * Restoring a workspace from its ledger (npm run workspace:restore, scripts/workspace-restore.ts):
 * the events written exactly as they are (same ids, sequences and hashes), the head they end at,
 * and every table that follows from them rebuilt, in one transaction, on a database that does not
 * hold the workspace yet.
 *
 * The ledger holds everything a workspace is except its secrets: password hashes, API key hashes,
 * invitation tokens and webhook signing secrets never enter it. So:
 * - members come back without a password (they must set one: npm run user:reset-password);
 * - API keys come back revoked (their ids, names and prefixes kept, so the events that name them
 *   still read), and new ones are created with npm run key:create;
 * - pending invitations come back revoked (their links cannot work);
 * - webhook endpoints are not restored (their signing secrets, and any credentials in their URLs,
 *   are not in the ledger): they are created again.
 * A member whose account (same id) already exists on the target database keeps it, password and all.
 *
 * What the ledger says of the identity tables (the workspace, its members, keys and invitations)
 * is folded here as the events go by (`IdentityFold`); the work tables (initiatives … decisions)
 * are rebuilt by the projections' own replay (server/projections/rebuild.ts).
 */
import { randomUUID } from 'node:crypto';
import { eq, inArray, or, sql } from 'drizzle-orm';
import type { Database, Tx } from '@/db';
import { apiKeys, invitations, ledgerEvents, ledgerHeads, memberships, users, workspaces, type MembershipRole } from '@/db/schema';
import type { BundleFrame } from '@/server/ledger/bundle';
import { canonicalJson, type LedgerEvent } from '@/server/ledger/canonical';
import { rebuildInTransaction, type RebuildReport } from '@/server/projections/rebuild';

/** A password hash no password matches (argon2's verify refuses it): the member must set one. */
export const NO_PASSWORD = '!restored: no password, set one with npm run user:reset-password';

/** The restored workspace and what could not come back with it. */
export interface RestoreReport {
  workspaceId: string;
  name: string;
  events: number;
  head: { sequence: number; headHash: string };
  /** The work tables rebuilt from the events (row counts). */
  projections: RebuildReport['rows'];
  /** Members restored without a password (email), and those whose account was already here. */
  membersWithoutPassword: string[];
  membersKept: string[];
  /** API keys restored revoked (prefix, name). */
  revokedKeys: { prefix: string; name: string }[];
  /** Pending invitations restored revoked (email). */
  revokedInvitations: string[];
  /** Webhook endpoints not restored (where they went, as the ledger has it: scheme, host and port). */
  webhookEndpoints: string[];
}

/** The workspace is already on this database (its id, or its name). */
export class WorkspaceExists extends Error {}
/** The events do not continue one another (not the chain the frame promised). */
export class NotTheChain extends Error {}

interface Member {
  userId: string;
  email: string;
  displayName: string;
  role: MembershipRole;
  joinedAt: Date;
}

interface Key {
  id: string;
  name: string;
  prefix: string;
  ownerUserId: string;
  createdAt: Date;
  revokedAt: Date | null;
}

interface Invitation {
  id: string;
  email: string;
  role: MembershipRole;
  invitedBy: string | null;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  acceptedBy: string | null;
  revokedAt: Date | null;
}

/** The identity tables as the events say, folded one event at a time. */
class IdentityFold {
  name: string | null = null;
  createdAt: Date | null = null;
  /** Everyone who was ever a member (for the accounts events name), and who is one now. */
  readonly people = new Map<string, { email: string; displayName: string; since: Date }>();
  readonly members = new Map<string, Member>();
  readonly keys = new Map<string, Key>();
  readonly invitations = new Map<string, Invitation>();
  readonly endpoints = new Map<string, string>();

  push(e: LedgerEvent): void {
    const p = e.payload as Record<string, unknown>;
    const at = new Date(e.occurredAtCanonical);
    switch (e.eventType) {
      case 'workspace.created':
        this.name = p.name as string;
        this.createdAt = at;
        return;
      case 'membership.created': {
        const userId = p.user_id as string;
        const person = this.people.get(userId);
        const displayName = (p.display_name as string) || person?.displayName || '';
        this.people.set(userId, { email: p.email as string, displayName, since: person?.since ?? at });
        this.members.set(userId, { userId, email: p.email as string, displayName, role: p.role as MembershipRole, joinedAt: at });
        return;
      }
      case 'membership.role_changed': {
        const m = this.members.get(p.user_id as string);
        if (m) m.role = p.to as MembershipRole;
        return;
      }
      case 'membership.removed':
        this.members.delete(p.user_id as string);
        return;
      case 'api_key.created':
        this.keys.set(p.id as string, {
          id: p.id as string,
          name: p.name as string,
          prefix: p.prefix as string,
          ownerUserId: p.owner_user_id as string,
          createdAt: at,
          revokedAt: null,
        });
        return;
      case 'api_key.revoked': {
        const k = this.keys.get(p.id as string);
        if (k) k.revokedAt ??= at;
        return;
      }
      case 'invitation.created':
        this.invitations.set(p.id as string, {
          id: p.id as string,
          email: p.email as string,
          role: p.role as MembershipRole,
          invitedBy: e.actorType === 'human' ? e.actorId : null,
          createdAt: at,
          expiresAt: new Date(p.expires_at as string),
          acceptedAt: null,
          acceptedBy: null,
          revokedAt: null,
        });
        return;
      case 'invitation.accepted': {
        const i = this.invitations.get(p.id as string);
        if (i) Object.assign(i, { acceptedAt: at, acceptedBy: p.user_id as string });
        return;
      }
      case 'invitation.revoked': {
        const i = this.invitations.get(p.id as string);
        if (i) i.revokedAt ??= at;
        return;
      }
      case 'webhook_endpoint.created': {
        // Older events carry the URL (its query cut); newer ones only where it goes.
        const target = p.target as { scheme: string; host: string; port: number } | undefined;
        this.endpoints.set(e.aggregateId, target ? `${target.scheme}://${target.host}:${target.port}` : (p.url as string));
        return;
      }
      case 'webhook_endpoint.deleted':
        this.endpoints.delete(e.aggregateId);
        return;
    }
  }
}

/** Events a statement inserts (20 parameters each, well under PostgreSQL's 65,535). */
const INSERT_CHUNK = 1000;

/**
 * Restores `frame.workspaceId` from `pages` (its events in order, from sequence 1 to the frame's
 * head; a verified bundle's). Everything is written in one transaction: a restore that fails
 * leaves nothing. Throws WorkspaceExists when the workspace is already here, NotTheChain when the
 * events do not run from the genesis to the head without a gap or a broken link.
 */
export async function restoreWorkspace(
  db: Database,
  frame: Pick<BundleFrame, 'workspaceId' | 'head'>,
  pages: AsyncIterable<LedgerEvent[]>,
  now = new Date(),
): Promise<RestoreReport> {
  const workspaceId = frame.workspaceId;
  return db.transaction(async (tx) => {
    const fold = new IdentityFold();
    let last = { sequence: 0, hash: '' };
    let workspaceRow = false;
    for await (const page of pages) {
      for (const e of page) {
        if (e.workspaceId !== workspaceId) throw new NotTheChain(`event ${e.sequence} belongs to workspace ${e.workspaceId}`);
        if (e.sequence !== last.sequence + 1) throw new NotTheChain(`event ${e.sequence} follows ${last.sequence}`);
        if (last.sequence > 0 && e.previousHash !== last.hash)
          throw new NotTheChain(`event ${e.sequence} does not link to ${last.sequence}`);
        last = { sequence: e.sequence, hash: e.eventHash };
        fold.push(e);
      }
      // The workspace row first (the events point to it): its name is in the first event.
      if (!workspaceRow && fold.name !== null) {
        await insertWorkspace(tx, workspaceId, fold.name, fold.createdAt!);
        workspaceRow = true;
      }
      if (!workspaceRow) throw new NotTheChain('the first event does not create the workspace');
      // Kept as the append keeps them: the payload as its canonical text (what the verified hashes cover).
      for (let i = 0; i < page.length; i += INSERT_CHUNK) {
        await tx
          .insert(ledgerEvents)
          .values(page.slice(i, i + INSERT_CHUNK).map((e) => ({ ...e, payload: null, payloadText: canonicalJson(e.payload) })));
      }
    }
    if (last.sequence !== frame.head.sequence || last.hash !== frame.head.headHash) {
      throw new NotTheChain(`the events end at ${last.sequence}, not at the head ${frame.head.sequence} ${frame.head.headHash}`);
    }
    await tx.insert(ledgerHeads).values({ workspaceId, sequence: last.sequence, headHash: last.hash, updatedAt: now });

    const people = await insertPeople(tx, fold);
    const members = [...fold.members.values()];
    if (members.length > 0) {
      await tx.insert(memberships).values(members.map((m) => ({ workspaceId, userId: m.userId, role: m.role, createdAt: m.joinedAt })));
    }
    const keys = [...fold.keys.values()];
    if (keys.length > 0) {
      await tx.insert(apiKeys).values(
        // A hash no key has (a key's is hex SHA-256): the key cannot be presented again.
        keys.map((k) => ({ ...k, workspaceId, secretHash: `restored:${randomUUID()}`, revokedAt: k.revokedAt ?? now })),
      );
    }
    const invites = [...fold.invitations.values()];
    const pending = invites.filter((i) => !i.acceptedAt && !i.revokedAt);
    if (invites.length > 0) {
      await tx.insert(invitations).values(
        invites.map((i) => ({
          ...i,
          workspaceId,
          tokenHash: `restored:${randomUUID()}`,
          revokedAt: i.revokedAt ?? (i.acceptedAt ? null : now),
        })),
      );
    }

    const rebuilt = await rebuildInTransaction(tx, workspaceId);
    return {
      workspaceId,
      name: fold.name!,
      events: last.sequence,
      head: { sequence: last.sequence, headHash: last.hash },
      projections: rebuilt.rows,
      membersWithoutPassword: people.created.filter((id) => fold.members.has(id)).map((id) => fold.people.get(id)!.email),
      membersKept: people.kept.filter((id) => fold.members.has(id)).map((id) => fold.people.get(id)!.email),
      revokedKeys: keys.filter((k) => !k.revokedAt).map((k) => ({ prefix: k.prefix, name: k.name })),
      revokedInvitations: pending.map((i) => i.email),
      webhookEndpoints: [...fold.endpoints.values()],
    };
  });
}

async function insertWorkspace(tx: Tx, id: string, name: string, createdAt: Date): Promise<void> {
  const [taken] = await tx
    .select({ id: workspaces.id, name: workspaces.name })
    .from(workspaces)
    .where(or(eq(workspaces.id, id), eq(sql`lower(${workspaces.name})`, name.toLowerCase())));
  if (taken) {
    throw new WorkspaceExists(
      taken.id === id
        ? `Workspace ${id} is already on this database.`
        : `A workspace named ${taken.name} is already on this database (${taken.id}).`,
    );
  }
  await tx.insert(workspaces).values({ id, name, createdAt });
}

/**
 * The accounts of everyone the events name as a member, ever (events and rows refer to them by
 * id): created without a password, or kept when this database has the account already. An
 * account here under another id with the same email cannot be matched: refused.
 */
async function insertPeople(tx: Tx, fold: IdentityFold): Promise<{ created: string[]; kept: string[] }> {
  const ids = [...fold.people.keys()];
  if (ids.length === 0) return { created: [], kept: [] };
  const emails = [...fold.people.values()].map((p) => p.email);
  const here = await tx
    .select({ id: users.id, email: users.email })
    .from(users)
    .where(or(inArray(users.id, ids), inArray(users.email, emails)));
  const kept = new Set(here.filter((u) => fold.people.has(u.id)).map((u) => u.id));
  const clash = here.find((u) => !fold.people.has(u.id));
  if (clash) throw new WorkspaceExists(`An account for ${clash.email} is already on this database under another id (${clash.id}).`);
  const created = ids.filter((id) => !kept.has(id));
  if (created.length > 0) {
    await tx.insert(users).values(
      created.map((id) => {
        const p = fold.people.get(id)!;
        return { id, email: p.email, displayName: p.displayName, passwordHash: NO_PASSWORD, createdAt: p.since };
      }),
    );
  }
  return { created, kept: [...kept] };
}
