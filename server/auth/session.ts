/**
 * Human sessions: next-auth's JWT session cookie, read here without Next.js so the REST transport,
 * the tRPC endpoint and server components all resolve the same signed-in user the same way.
 */
import type { HeaderReader } from '@/server/http/exchange';
import { and, eq, sql } from 'drizzle-orm';
import { decode, encode } from 'next-auth/jwt';
import type { Database } from '@/db';
import { memberships, users, type MembershipRole } from '@/db/schema';

/** Sessions last a working day; signing in again is cheap, a stolen cookie lives shorter. */
export const SESSION_MAX_AGE_SECONDS = 8 * 60 * 60;

/** next-auth's cookie name: the `__Secure-` variant when the app is served over https. */
export function sessionCookieName(appUrl: string): string {
  return appUrl.startsWith('https://') ? '__Secure-next-auth.session-token' : 'next-auth.session-token';
}

export interface SessionUser {
  userId: string;
  email: string;
  displayName: string;
  memberships: { workspaceId: string; role: MembershipRole }[];
}

function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return null;
      }
    }
  }
  return null;
}

/** True when the request carries a session cookie at all (valid or not). */
export function hasSessionCookie(headers: HeaderReader, appUrl: string): boolean {
  return cookieValue(headers.get('cookie'), sessionCookieName(appUrl)) !== null;
}

/**
 * The signed-in user of a request, with their memberships as they are now (a role changed or a
 * user removed takes effect at once), or null without a valid, unexpired session.
 */
export async function readSessionUser(db: Database, headers: HeaderReader, secret: string, appUrl: string): Promise<SessionUser | null> {
  const token = cookieValue(headers.get('cookie'), sessionCookieName(appUrl));
  if (!token) return null;
  let claims: Awaited<ReturnType<typeof decode>>;
  try {
    claims = await decode({ token, secret });
  } catch {
    return null;
  }
  const userId = claims?.sub;
  if (!userId || !/^[0-9a-f-]{36}$/.test(userId)) return null;
  const epoch = typeof claims?.epoch === 'number' ? claims.epoch : 0;
  const rows = await db
    .select({
      email: users.email,
      displayName: users.displayName,
      sessionEpoch: users.sessionEpoch,
      workspaceId: memberships.workspaceId,
      role: memberships.role,
    })
    .from(users)
    .leftJoin(memberships, eq(memberships.userId, users.id))
    .where(and(eq(users.id, userId)));
  const first = rows[0];
  // Unknown user, or a session from before the user last signed out.
  if (!first || first.sessionEpoch !== epoch) return null;
  return {
    userId,
    email: first.email,
    displayName: first.displayName,
    memberships: rows.filter((r) => r.workspaceId && r.role).map((r) => ({ workspaceId: r.workspaceId!, role: r.role! })),
  };
}

/** A session cookie value for `userId`, exactly as next-auth would set it (used by tests and tools). */
export function encodeSession(userId: string, secret: string, epoch = 0): Promise<string> {
  return encode({ token: { sub: userId, epoch }, secret, maxAge: SESSION_MAX_AGE_SECONDS });
}

/** Ends every session of the user issued so far (sign-out; later, password changes). */
export async function endSessions(db: Database, userId: string): Promise<void> {
  await db
    .update(users)
    .set({ sessionEpoch: sql`${users.sessionEpoch} + 1` })
    .where(eq(users.id, userId));
}
