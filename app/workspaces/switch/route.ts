/**
 * Makes a workspace current (the cookie every page reads, app/_lib/session.ts) and goes back.
 *
 * POST only, from the app's own pages (form fields `workspace` and `return`): the header's
 * switcher, the confirmation page, the inbox of all workspaces. The cookie is set only for a
 * workspace the signed-in user belongs to; otherwise nothing changes and the page they return to
 * says what it can.
 *
 * GET `?to=&return=` (a link from before, or from another site) changes nothing: a GET must not,
 * since a link or an image on any page can make one. It goes to the page that asks, with a button
 * that POSTs (./confirm/page.tsx).
 */
import { NextResponse, type NextRequest } from 'next/server';
import { safeReturnTo } from '@/app/_lib/return-to';
import { switchTo as confirmPage, WORKSPACE_COOKIE } from '@/app/_lib/session';
import { readSessionUser } from '@/server/auth/session';
import { isAppOrigin } from '@/server/http/origin';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

/**
 * A 303 to a path of this app. The Location is the path alone, never an absolute URL: the browser
 * resolves it against the address it used (a switch on 127.0.0.1 stays on 127.0.0.1), and no
 * origin has to be taken from the request's Host, which the client writes.
 */
function seeOther(path: string): NextResponse {
  return new NextResponse(null, { status: 303, headers: { Location: path } });
}

async function switchTo(req: NextRequest, workspaceId: string | null, returnTo: string | null): Promise<NextResponse> {
  const runtime = await getRuntime();
  const response = seeOther(safeReturnTo(returnTo ?? undefined));
  const user = await readSessionUser(runtime.db, req.headers, runtime.secrets.auth, runtime.env.APP_URL);
  if (user && workspaceId && user.memberships.some((m) => m.workspaceId === workspaceId)) {
    response.cookies.set(WORKSPACE_COOKIE, workspaceId, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      secure: runtime.env.APP_URL.startsWith('https://'),
      maxAge: 365 * 24 * 60 * 60,
    });
  }
  return response;
}

export function GET(req: NextRequest): NextResponse {
  const to = req.nextUrl.searchParams.get('to') ?? '';
  return seeOther(confirmPage(to, safeReturnTo(req.nextUrl.searchParams.get('return') ?? undefined)));
}

export async function POST(req: NextRequest): Promise<NextResponse> {
  const runtime = await getRuntime();
  const sent = req.headers.get('origin');
  const sameOrigin = sent === null ? req.headers.get('sec-fetch-site') === 'same-origin' : isAppOrigin(sent, runtime.env.APP_URL);
  if (!sameOrigin) {
    return new NextResponse('Cross-site request refused.', { status: 403 });
  }
  const form = await req.formData().catch(() => null);
  const field = (name: string) => {
    const v = form?.get(name);
    return typeof v === 'string' ? v : null;
  };
  return switchTo(req, field('workspace'), field('return'));
}
