/**
 * Server-side helpers for pages: the signed-in user, their workspaces and the current one, and a
 * caller acting as them.
 *
 * The current workspace is the one every page shows (decisions, initiatives, settings). It is kept
 * in a cookie set by /workspaces/switch, checked against the user's memberships on every request
 * (a workspace they have left is never shown), and defaults to their first workspace. A page of
 * one resource (a decision, an initiative) belongs to that resource's workspace: opening it from
 * another one asks to switch there first (one click), so the header always names the workspace
 * on screen.
 */
import 'server-only';
import { inArray } from 'drizzle-orm';
import { cookies, headers } from 'next/headers';
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

async function workspacesOf(user: SessionUser): Promise<WorkspaceChoice[]> {
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

/** The cookie naming the current workspace (a preference, not a credential: membership is checked). */
export const WORKSPACE_COOKIE = 'aws-workspace';

export interface WorkspaceView {
  /** Every workspace of the user, in the order they joined. */
  workspaces: WorkspaceChoice[];
  /** The one the pages show, or null for a user in no workspace. */
  current: WorkspaceChoice | null;
}

export async function currentWorkspace(user: SessionUser): Promise<WorkspaceView> {
  const workspaces = await workspacesOf(user);
  const chosen = (await cookies()).get(WORKSPACE_COOKIE)?.value;
  return { workspaces, current: workspaces.find((w) => w.id === chosen) ?? workspaces[0] ?? null };
}

/**
 * Where to go to make `workspaceId` current and land on `returnTo`: the page that asks, with a
 * button (a POST); never a GET that switches by itself.
 */
export function switchTo(workspaceId: string, returnTo: string): string {
  return `/workspaces/switch/confirm?${new URLSearchParams({ to: workspaceId, return: returnTo })}`;
}

/** For a page of one resource: offers to switch to the resource's workspace when another is current. */
export async function showIn(user: SessionUser, workspaceId: string, here: string): Promise<void> {
  const { current } = await currentWorkspace(user);
  if (current?.id !== workspaceId) redirect(switchTo(workspaceId, here));
}

/** A tRPC caller acting as the request's signed-in user (the same procedures the API runs). */
export async function caller() {
  const h = await requestHeaders();
  const runtime = await getRuntime();
  return callerFor(h, new URL(runtime.env.APP_URL));
}
