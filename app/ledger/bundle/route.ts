/**
 * "Download a bundle" on /ledger: the current workspace's whole ledger as a bundle file, the same
 * file `npm run ledger:export -- --workspace <it>` writes (server/ledger/bundle.ts), which
 * `npm run ledger:verify -- --bundle <file>` checks with no database. Every member may download it.
 */
import { NextResponse, type NextRequest } from 'next/server';
import { WORKSPACE_COOKIE } from '@/app/_lib/session';
import { readSessionUser } from '@/server/auth/session';
import { bundleText, exportBundle } from '@/server/ledger/bundle';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function GET(req: NextRequest): Promise<NextResponse> {
  const runtime = await getRuntime();
  const user = await readSessionUser(runtime.db, req.headers, runtime.secrets.auth, runtime.env.APP_URL);
  if (!user) return new NextResponse('Sign in to download the ledger.', { status: 401 });
  // The workspace named (?workspace=), else the current one, else the first; always one of theirs.
  const mine = user.memberships.map((m) => m.workspaceId);
  const named = req.nextUrl.searchParams.get('workspace');
  if (named !== null && !mine.includes(named)) return new NextResponse('Not a workspace of yours.', { status: 404 });
  const preferred = named ?? req.cookies.get(WORKSPACE_COOKIE)?.value;
  const workspaceId = preferred && mine.includes(preferred) ? preferred : mine[0];
  if (!workspaceId) return new NextResponse('You are not a member of any workspace.', { status: 404 });
  const bundle = await exportBundle(runtime.db, workspaceId);
  return new NextResponse(bundleText(bundle), {
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Disposition': `attachment; filename="ledger-${workspaceId}-${bundle.head.sequence}.json"`,
      'Cache-Control': 'no-store',
    },
  });
}
