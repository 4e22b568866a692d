/**
 * "Download a bundle" on /ledger: the current workspace's whole ledger as a bundle file, the same
 * file `npm run ledger:export -- --workspace <it>` writes (server/ledger/bundle.ts), which
 * `npm run ledger:verify -- --bundle <file>` checks with no database. Every member may download it.
 */
import { NextResponse, type NextRequest } from 'next/server';
import { WORKSPACE_COOKIE } from '@/app/_lib/session';
import { readSessionUser } from '@/server/auth/session';
import { bundleText, eventPages } from '@/server/ledger/bundle';
import { signedBundleFrame } from '@/server/ledger/bundle-export';
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
  const frame = await signedBundleFrame(runtime.db, workspaceId, { appUrl: runtime.env.APP_URL, secret: runtime.secrets.ledger });
  // Sent as it is read, a page of events at a time (bundleText): a long ledger is never held whole.
  const pieces = bundleText(frame, eventPages(runtime.db, frame));
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await pieces.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await pieces.return(undefined);
    },
  });
  return new NextResponse(body, {
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Disposition': `attachment; filename="ledger-${workspaceId}-${frame.head.sequence}.json"`,
      'Cache-Control': 'no-store',
    },
  });
}
