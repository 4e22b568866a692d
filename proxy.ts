/**
 * Next.js proxy (the successor of middleware): a Content-Security-Policy with a fresh nonce on every
 * human page. Next.js marks its own scripts with the nonce it finds in the request's CSP header, so
 * only the app's scripts run: text an agent wrote cannot become a script even if rendering ever
 * failed to escape it (OWASP API10; e2e/decisions.spec.ts shows both). /api/v1 never reaches here
 * (scripts/serve.mjs hands it to the REST transport, which sends its own stricter policy), and the
 * API reference at /docs/api sends its own (app/docs/api/route.ts).
 */
import { NextResponse, type NextRequest } from 'next/server';
import { contentSecurityPolicy } from '@/app/_lib/content-security-policy';

export function proxy(request: NextRequest): NextResponse {
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64');
  // 'strict-dynamic': scripts the nonced ones load are trusted too (Next.js's chunks); nothing else.
  // React's development build evaluates code, so `next dev` needs 'unsafe-eval'; production never.
  const dev = process.env.NODE_ENV === 'development';
  const policy = contentSecurityPolicy(`'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ''}`);
  const headers = new Headers(request.headers);
  headers.set('content-security-policy', policy);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set('Content-Security-Policy', policy);
  return response;
}

export const config = {
  matcher: [
    {
      source: '/((?!api/|docs/api|_next/static|_next/image|favicon.ico).*)',
      // Prefetches are not rendered as documents: no policy needed, and no nonce to spend.
      missing: [
        { type: 'header', key: 'next-router-prefetch' },
        { type: 'header', key: 'purpose', value: 'prefetch' },
      ],
    },
  ],
};
