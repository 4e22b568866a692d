/** Server-side helpers for pages: the signed-in user, their workspaces, and a caller acting as them. */
import 'server-only';
import { inArray } from 'drizzle-orm';
import { headers } from 'next/headers';
import { redirect } from 'next/navigation';
import { workspaces } from '@/db/schema';
import { callerFor } from '@/server/api/internal';
import { readSessionUser, type SessionUser } from '@/server/auth/session';
import { getRuntime } from '@/server/runtime';

async function requestHeaders(): Promise<Headers> {
  return new Headers(await headers());
}

export async function currentUser(): Promise<SessionUser | null> {
  const runtime = await getRuntime();
  return readSessionUser(runtime.db, await requestHeaders(), runtime.secrets.auth, runtime.env.APP_URL);
}

/** The signed-in user, or a redirect to sign in (and back to `returnTo` afterwards). */
export async function requireUser(returnTo: string): Promise<SessionUser> {
  const user = await currentUser();
  if (!user) redirect(`/signin?callbackUrl=${encodeURIComponent(returnTo)}`);
  return user;
}

export interface WorkspaceChoice {
  id: string;
  name: string;
  role: string;
}

export async function workspacesOf(user: SessionUser): Promise<WorkspaceChoice[]> {
  if (user.memberships.length === 0) return [];
  const runtime = await getRuntime();
  const rows = await runtime.db
    .select({ id: workspaces.id, name: workspaces.name })
    .from(workspaces)
    .where(
      inArray(
        workspaces.id,
        user.memberships.map((m) => m.workspaceId),
      ),
    );
  const names = new Map(rows.map((r) => [r.id, r.name]));
  return user.memberships.map((m) => ({ id: m.workspaceId, name: names.get(m.workspaceId) ?? m.workspaceId, role: m.role }));
}

/** A tRPC caller acting as the request's signed-in user (the same procedures the API runs). */
export async function caller() {
  const h = await requestHeaders();
  const runtime = await getRuntime();
  return callerFor(h, new URL(runtime.env.APP_URL));
}
