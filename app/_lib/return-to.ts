/**
 * Where to send someone after signing in: only a path of this app. Anything that a browser or URL
 * parser could read as another origin (`//x`, `/\x`, control characters, absolute URLs) falls
 * back to the decisions list, so a crafted link cannot turn sign-in into a redirect to another site.
 */
export function safeReturnTo(value: string | undefined, fallback = '/decisions'): string {
  if (!value || value.length > 2000) return fallback;
  if (!value.startsWith('/') || [...value].some((c) => c === '\\' || c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return fallback;
  const base = 'http://app.invalid';
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    return fallback;
  }
  if (url.origin !== base) return fallback;
  return `${url.pathname}${url.search}${url.hash}`;
}
