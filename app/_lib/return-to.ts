/**
 * Where to send someone after signing in or switching workspace: only a path of this app. Anything
 * that a browser or URL parser could read as another origin (`//x`, `/\x`, control characters,
 * absolute URLs) falls back to the decisions list, so a crafted link cannot turn sign-in into a
 * redirect to another site.
 *
 * The value is normalised first (`/./`, `/a/../` and the like resolved as a browser would) and the
 * result is checked again: `/.//evil.com` normalises to `//evil.com`, which a browser reads as
 * another host, so checking only what was sent is not enough.
 */
export function safeReturnTo(value: string | undefined, fallback = '/decisions'): string {
  if (!value || value.length > 2000 || !isLocalPath(value)) return fallback;
  const base = 'http://app.invalid';
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    return fallback;
  }
  if (url.origin !== base) return fallback;
  const path = `${url.pathname}${url.search}${url.hash}`;
  return isLocalPath(path) ? path : fallback;
}

/**
 * A path that starts with one `/` and nothing a browser might read as the start of a host: no
 * second `/` or `\`, neither literally nor percent-encoded (a server or proxy that decodes
 * `%2F` or `%5C` before redirecting would make one), and no control characters.
 */
function isLocalPath(path: string): boolean {
  if (!path.startsWith('/') || [...path].some((c) => c === '\\' || c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return false;
  const second = /^\/(?:\/|%2f|%5c)/i;
  return !second.test(path);
}
