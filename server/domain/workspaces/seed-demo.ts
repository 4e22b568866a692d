/**
 * The demo workspace made on first start with an empty database, so a newcomer can call the API
 * at once: a workspace named `demo` with its Inbox, an owner who can sign in, and an API key.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Database } from '@/db';
import { workspaces } from '@/db/schema';
import { generatePassword, hashPassword } from '@/server/auth/passwords';
import { createApiKey } from '../api-keys/api-keys';
import { systemTrace, type Actor } from '../actor';
import { createWorkspace } from './create-workspace';

export interface DemoWorkspace {
  workspaceId: string;
  workspaceName: string;
  apiKey: string;
  ownerEmail: string;
  ownerPassword: string;
}

const SEED_LOCK_KEY = 727_002;

/** Creates the demo workspace if the database has no workspace yet; otherwise does nothing. */
export async function seedDemoIfEmpty(db: Database): Promise<DemoWorkspace | null> {
  const ownerPassword = generatePassword();
  const passwordHash = await hashPassword(ownerPassword);
  return db.transaction(async (tx) => {
    // Instances starting together against one PostgreSQL: one seeds, the others then see it.
    await tx.execute(sql`select pg_advisory_xact_lock(${SEED_LOCK_KEY})`);
    const [any] = await tx.select({ id: workspaces.id }).from(workspaces).limit(1);
    if (any) return null;
    const trace = systemTrace(randomUUID());
    const ownerEmail = 'owner@demo.local';
    const created = await createWorkspace(tx, trace, {
      name: 'demo',
      owner: { email: ownerEmail, displayName: 'Demo Owner', passwordHash },
    });
    const actor: Actor = {
      type: 'system',
      id: 'system:seed',
      ownerId: created.ownerUserId,
      workspaceId: created.workspaceId,
      trace,
    };
    const key = await createApiKey(tx, actor, { name: 'demo key' });
    return { workspaceId: created.workspaceId, workspaceName: 'demo', apiKey: key.secret, ownerEmail, ownerPassword };
  });
}
