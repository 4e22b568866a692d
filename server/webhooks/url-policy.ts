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
 * rebinding, is refused too). Both use ipaddr.js's ranges (only `unicast` passes), and refusedAddress
 * narrows IPv6 to global unicast.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { AppError } from '@/server/errors';

/** The only IPv6 addresses handed out for the public internet (IANA: global unicast). */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Why `address` may not be connected to, or null when it may (a public unicast address).
 * ipaddr.js names the special ranges; what it leaves as `unicast` in IPv6 includes addresses no
 * public host has, among them the deprecated IPv4-compatible ::/96 (`[::127.0.0.1]` is written
 * `[::7f00:1]`), so IPv6 must also be global unicast, 2000::/3.
 */
export function refusedAddress(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'not an IP address';
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // ::ffff:10.0.0.1 reaches 10.0.0.1.
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    else if (v6.range() === 'unicast' && !v6.match(GLOBAL_UNICAST_V6)) return 'reserved IPv6 address (outside 2000::/3)';
  }
  const range = parsed.range();
  return range === 'unicast' ? null : `${range} address`;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for connections that fails when the name resolves to an address the rule refuses:
 * the delivery agents check the address connected to with ipaddr.js's ranges alone, which pass
 * the IPv6 addresses refusedAddress adds (a name can be made to resolve to one after the check).
 */
export function checkedLookup(resolve: typeof dnsLookup = dnsLookup) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, { ...options, all: true }, (err, found) => {
      if (err) return callback(err, [], undefined);
      const addresses = found as LookupAddress[];
      for (const a of addresses) {
        const why = refusedAddress(a.address);
        if (why) {
          const refused = Object.assign(
            new Error(`${hostname} resolves to ${a.address}, a ${why}: webhooks go to public addresses only.`),
            {
              code: 'EREFUSEDADDRESS',
            },
          );
          return callback(refused, [], undefined);
        }
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** A 400 about the request's `url`. */
export const invalidUrl = (message: string) =>
  new AppError('validation_failed', message, { issues: [{ path: 'url', message }], fields: ['url'] });

/** `raw` as an absolute http:// or https:// URL without a user name or password (`why` says what to do instead). */
export function httpUrlOf(raw: string, why: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidUrl('The URL must be an absolute http:// or https:// URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('The URL must be an http:// or https:// URL.');
  if (url.username || url.password) throw invalidUrl(`The URL must not carry a user name or password: ${why}`);
  return url;
}

/**
 * The first address `url`'s host resolves to that the rule refuses, with why; null when it
 * resolves to public addresses only. A host that does not resolve is a 400.
 */
export async function refusedResolution(url: URL): Promise<{ address: string; why: string } | null> {
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
    if (why) return { address, why };
  }
  return null;
}

/**
 * Checks a webhook URL before it is stored: http or https, no credentials in it, and (unless
 * private addresses are allowed) a host that resolves only to public addresses. Returns the URL
 * as it will be called.
 */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean): Promise<string> {
  const url = httpUrlOf(raw, 'deliveries are signed, check the signature instead.');
  url.hash = '';
  if (allowPrivate) return url.toString();
  const refused = await refusedResolution(url);
  if (refused) {
    throw invalidUrl(
      `The URL resolves to ${refused.address}, a ${refused.why}: webhooks go to public addresses only (WEBHOOKS_ALLOW_PRIVATE=true allows others).`,
    );
  }
  return url.toString();
}

/**
 * The agents deliveries connect through: kept-alive connections, and each new connection's
 * address checked against the same rule (refused before any byte is sent).
 */
export function deliveryAgents(allowPrivate: boolean): { http: http.Agent; https: https.Agent } {
  const options = {
    keepAlive: true,
    maxSockets: 4,
    allowPrivateIPAddress: allowPrivate,
    allowMetaIPAddress: allowPrivate,
    ...(allowPrivate ? {} : { lookup: checkedLookup() }),
  };
  return { http: new RequestFilteringHttpAgent(options), https: new RequestFilteringHttpsAgent(options) };
}
