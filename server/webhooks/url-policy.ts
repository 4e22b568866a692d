/**
 * Where webhooks may be sent. A webhook URL is chosen by whoever holds an API key, and the service
 * then makes requests to it from inside its network: without a rule it would reach loopback
 * services, the private network and the cloud metadata endpoint (server-side request forgery,
 * OWASP API7). So URLs resolving to anything but public unicast addresses are refused, unless
 * WEBHOOKS_ALLOW_PRIVATE=true.
 *
 * The rule is applied twice: when an endpoint is created or changed (every address its host
 * resolves to, for a 400 the caller can act on), and at every connection (request-filtering-agent
 * checks the address actually connected to, so a name that resolves elsewhere later, DNS
 * rebinding, is refused too). Both use ipaddr.js's ranges: only `unicast` passes.
 */
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { AppError } from '@/server/errors';

/** Why `address` may not be connected to, or null when it may (a public unicast address). */
export function refusedAddress(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'not an IP address';
  }
  // ::ffff:10.0.0.1 reaches 10.0.0.1.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  return range === 'unicast' ? null : `${range} address`;
}

const invalidUrl = (message: string) => new AppError('validation_failed', message, { issues: [{ path: 'url', message }], fields: ['url'] });

/**
 * Checks a webhook URL before it is stored: http or https, no credentials in it, and (unless
 * private addresses are allowed) a host that resolves only to public addresses. Returns the URL
 * as it will be called.
 */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidUrl('The URL must be an absolute http:// or https:// URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('The URL must be an http:// or https:// URL.');
  if (url.username || url.password) {
    throw invalidUrl('The URL must not carry a user name or password: deliveries are signed, check the signature instead.');
  }
  url.hash = '';
  if (allowPrivate) return url.toString();
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      throw invalidUrl(`The host ${host} could not be resolved.`);
    }
  }
  for (const address of addresses) {
    const why = refusedAddress(address);
    if (why) {
      throw invalidUrl(
        `The URL resolves to ${address}, a ${why}: webhooks go to public addresses only (WEBHOOKS_ALLOW_PRIVATE=true allows others).`,
      );
    }
  }
  return url.toString();
}

/**
 * The agents deliveries connect through: kept-alive connections, and each new connection's
 * address checked against the same rule (refused before any byte is sent).
 */
export function deliveryAgents(allowPrivate: boolean): { http: http.Agent; https: https.Agent } {
  const options = { keepAlive: true, maxSockets: 4, allowPrivateIPAddress: allowPrivate, allowMetaIPAddress: allowPrivate };
  return { http: new RequestFilteringHttpAgent(options), https: new RequestFilteringHttpsAgent(options) };
}
