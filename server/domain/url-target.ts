/**
 * A URL as ledger events record it: where it goes (scheme, host, port) and a digest of the whole
 * URL, never its path or query. URLs that members register keep secrets there (Slack-, Discord-
 * and Teams-style webhooks, an MCP server's `?key=`), and every member reads the ledger, viewers
 * too, who may not read the resources that hold the URLs. The digest is SHA-256 of the URL as the
 * resource shows it (`printf %s "$URL" | sha256sum`), so whoever holds the URL can tell it is the
 * one recorded.
 */
import { createHash } from 'node:crypto';

export interface UrlTarget {
  scheme: string;
  host: string;
  port: number;
  url_digest: string;
}

export function targetForEvents(url: string): UrlTarget {
  const u = new URL(url);
  const scheme = u.protocol.slice(0, -1);
  return {
    scheme,
    host: u.hostname,
    port: u.port === '' ? (scheme === 'https' ? 443 : 80) : Number(u.port),
    url_digest: `sha256:${createHash('sha256').update(url, 'utf8').digest('hex')}`,
  };
}
