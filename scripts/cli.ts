/** Shared pieces of the command-line tools: the runtime from the environment, and finding a workspace. */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, or } from 'drizzle-orm';
import type { Database } from '@/db';
import { memberships, workspaces } from '@/db/schema';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { parseEnv } from '@/server/env';
import { createRuntime, type Runtime } from '@/server/runtime';

export async function openCliRuntime(): Promise<Runtime> {
  return createRuntime(parseEnv(process.env));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The workspace named by id or name, with its first owner; exits with a message when there is none. */
export async function findWorkspace(db: Database, ref: string): Promise<{ id: string; name: string; ownerId: string }> {
  const match = UUID.test(ref) ? or(eq(workspaces.id, ref), eq(workspaces.name, ref)) : eq(workspaces.name, ref);
  const [ws] = await db.select({ id: workspaces.id, name: workspaces.name }).from(workspaces).where(match).limit(1);
  if (!ws) fail(`No workspace with id or name ${JSON.stringify(ref)}.`);
  const [owner] = await db
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.workspaceId, ws.id), eq(memberships.role, 'owner')))
    .orderBy(asc(memberships.createdAt))
    .limit(1);
  if (!owner) fail(`Workspace ${ws.name} has no owner.`);
  return { ...ws, ownerId: owner.userId };
}

export function cliActor(tool: string, workspace: { id: string; ownerId: string }): Actor {
  return {
    type: 'system',
    id: `system:cli:${tool}`,
    ownerId: workspace.ownerId,
    workspaceId: workspace.id,
    trace: systemTrace(randomUUID()),
  };
}

export function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

/** Runs a tool with the runtime open, closing it (and PGlite's directory lock) whatever happens. */
export async function withRuntime(run: (runtime: Runtime) => Promise<number>): Promise<void> {
  let runtime: Runtime;
  try {
    runtime = await openCliRuntime();
  } catch (err) {
    fail((err as Error).message);
  }
  let code = 1;
  try {
    code = await run(runtime);
  } catch (err) {
    console.error((err as Error).message);
  } finally {
    await runtime.close();
  }
  process.exit(code);
}
