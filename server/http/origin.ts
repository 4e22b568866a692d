/**
 * The origins the app's own pages are served from: what a signed-in write's `Origin` header is
 * compared with (server/api/trpc.ts, app/workspaces/switch/route.ts, server/mcp/http.ts).
 *
 * They come from APP_URL, the address browsers use, and never from the request's `Host` (or
 * X-Forwarded-Host): those are the client's own words, and a request that says `Host: evil.example`
 * with `Origin: https://evil.example` must not pass for one of the app's pages.
 *
 * One exception keeps a laptop working: `npm start` defaults APP_URL to http://localhost:3000 and
 * listens on 127.0.0.1, so a browser may open either. When APP_URL's host is a loopback name
 * (localhost, 127.0.0.1, [::1]), the other loopback spellings with the same scheme and port are the
 * app's too. Only this machine can reach those addresses, so no other site can claim them.
 */

const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/** APP_URL's origin, and when its host is a loopback name, the same scheme and port on the other loopback names. */
export function appOrigins(appUrl: string): string[] {
  const url = new URL(appUrl);
  if (!LOOPBACK_HOSTS.includes(url.hostname)) return [url.origin];
  const port = url.port ? `:${url.port}` : '';
  return [url.origin, ...LOOPBACK_HOSTS.filter((h) => h !== url.hostname).map((h) => `${url.protocol}//${h}${port}`)];
}

/** True when `origin` (an `Origin` header as a browser sends it) is one of the app's own. */
export function isAppOrigin(origin: string, appUrl: string): boolean {
  return appOrigins(appUrl).includes(origin);
}
