/** next-auth's routes (sign-in, sign-out, session, CSRF), with options built from the runtime. */
import NextAuth from 'next-auth';
import { authOptions } from '@/server/auth/next-auth';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type RouteContext = { params: Promise<{ nextauth: string[] }> };

async function handler(req: Request, ctx: RouteContext): Promise<Response> {
  const options = authOptions(await getRuntime());
  // next-auth v4 serves the App Router when called as (req, context, options).
  return (NextAuth as unknown as (req: Request, ctx: RouteContext, options: unknown) => Promise<Response>)(req, ctx, options);
}

export { handler as GET, handler as POST };
