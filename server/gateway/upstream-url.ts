/**
 * Where an upstream MCP server may be: the URL an owner registers (POST /mcp-servers) is one the
 * service then calls from inside its network with the credential it keeps, so it gets the webhook
 * rule (server/webhooks/url-policy.ts): http or https, no credentials in the URL, and a host that
 * resolves only to public unicast addresses. The operator names the hosts exempt from the address
 * rule in MCP_UPSTREAM_ALLOW_HOSTS (an upstream on their own network; loopback in the tests).
 */
import net from 'node:net';
import { httpUrlOf, invalidUrl, refusedResolution } from '@/server/webhooks/url-policy';

/**
 * A host as compared: as a URL spells it (lower case, IDNA, an IP literal in its one form, `127.1`
 * as `127.0.0.1`), without a trailing dot.
 */
function hostKey(host: string): string {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  try {
    return new URL(`http://${net.isIPv6(bare) ? `[${bare}]` : bare}/`).hostname.replace(/\.$/, '');
  } catch {
    return bare.toLowerCase();
  }
}

/** Whether the operator lets upstream URLs on `hostname` (a URL's hostname) reach any address (MCP_UPSTREAM_ALLOW_HOSTS). */
export function hostAllowed(hostname: string, allowHosts: readonly string[]): boolean {
  const key = hostKey(hostname);
  return allowHosts.some((h) => hostKey(h) === key);
}

/**
 * Checks an upstream URL before it is stored or called: an absolute http(s) URL without user name,
 * password or fragment whose host resolves to public addresses only, unless the host is one the
 * operator allows. Returns the URL as it will be called; 400 validation_failed naming `url`
 * otherwise. It resolves the host: call it before any transaction.
 */
export async function checkUpstreamUrl(raw: string, allowHosts: readonly string[]): Promise<string> {
  const url = httpUrlOf(raw, 'send the credential the upstream needs as a header (`headers`), which is stored encrypted.');
  // A fragment is never sent: a URL that carries one is not the URL that would be called.
  if (url.href.includes('#')) throw invalidUrl('The URL must not carry a fragment (#…): it is never sent to the server.');
  if (hostAllowed(url.hostname, allowHosts)) return url.toString();
  const refused = await refusedResolution(url);
  if (refused) {
    throw invalidUrl(
      `The URL resolves to ${refused.address}, a ${refused.why}: MCP servers are reached at public addresses only ` +
        `(the operator may allow a host with MCP_UPSTREAM_ALLOW_HOSTS).`,
    );
  }
  return url.toString();
}
