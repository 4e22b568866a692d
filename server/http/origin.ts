/**
 * The origin a request was addressed to, as the browser saw it: what a signed-in write's `Origin`
 * header is compared with (server/api/trpc.ts). Browsers send `Host` as typed in the address bar,
 * so the app answers rulings on whichever address it is reached by (127.0.0.1, localhost, a LAN
 * name), while a page of any other origin still cannot post with the session cookie.
 *
 * Behind reverse proxies (TRUSTED_PROXY_HOPS > 0) the address the browser used is in
 * X-Forwarded-Host / X-Forwarded-Proto, which each proxy sets or appends to: the entry written by
 * the outermost trusted proxy is `hops` places from the end (as for X-Forwarded-For in
 * server/rate-limits.ts). Without trusted proxies those headers are the client's own words and are
 * ignored.
 */
import type { HeaderReader } from './exchange';

/** host[:port] as RFC 9110 allows it in Host: a name or IPv4 address, or an IPv6 literal in brackets. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The `hops`-th entry from the end of a comma-separated forwarding header (the first when there are fewer). */
function forwardedEntry(value: string | null, hops: number): string | null {
  if (!value) return null;
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) return null;
  return entries[Math.max(0, entries.length - hops)]!;
}

/** `scheme://host[:port]` the request was addressed to, or null when the request does not say. */
export function requestOrigin(headers: HeaderReader, trustedProxyHops: number): string | null {
  let host = headers.get('host');
  let proto = 'http';
  if (trustedProxyHops > 0) {
    host = forwardedEntry(headers.get('x-forwarded-host'), trustedProxyHops) ?? host;
    proto = forwardedEntry(headers.get('x-forwarded-proto'), trustedProxyHops)?.toLowerCase() ?? proto;
  }
  if (!host || !HOST.test(host) || (proto !== 'http' && proto !== 'https')) return null;
  // URL lower-cases the name and drops a default port, as browsers do when they write Origin.
  return new URL(`${proto}://${host}`).origin;
}

/**
 * The request's origin for a context: its Host (or trusted forwarded host), else the URL it was
 * handed with (an in-process caller's Request carries no Host header).
 */
export function addressedOrigin(headers: HeaderReader, url: URL, trustedProxyHops: number): string {
  return requestOrigin(headers, trustedProxyHops) ?? url.origin;
}
