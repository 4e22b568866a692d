/**
 * HTTP Strict Transport Security: once APP_URL is https, every answer (pages, /api/v1, /mcp, the
 * error pages) tells browsers to reach this host, and its subdomains, over https only for a year,
 * so that a later plain-http link or a network that strips TLS cannot downgrade a signed-in
 * session. Never on http: browsers ignore it there anyway, and an http APP_URL is a laptop or a
 * test, where pinning a host to https would lock people out of it.
 */
export const STRICT_TRANSPORT_SECURITY = 'max-age=31536000; includeSubDomains';

let last: { appUrl: string; headers: Readonly<Record<string, string>> } | undefined;

/** The headers to add to every answer for this APP_URL: HSTS when it is https, none otherwise. */
export function transportSecurityHeaders(appUrl: string): Readonly<Record<string, string>> {
  // Every request asks with the same APP_URL: parsed once.
  if (last?.appUrl !== appUrl) {
    const https = new URL(appUrl).protocol === 'https:';
    last = { appUrl, headers: https ? { 'Strict-Transport-Security': STRICT_TRANSPORT_SECURITY } : {} };
  }
  return last.headers;
}
