import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedLookup, checkWebhookUrl, deliveryAgents, refusedAddress } from './url-policy';

describe('refusedAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['2002:7f00:1::', '6to4'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['192.0.2.1', 'reserved'],
  ])('refuses %s (%s)', (address, range) => {
    expect(refusedAddress(address)).toBe(`${range} address`);
  });

  // ipaddr.js calls these unicast; no public host has one.
  it.each(['::7f00:1', '::a00:1', '::a9fe:a9fe', '4000::1', 'e000::1'])(
    'refuses %s, an IPv6 address outside global unicast (IPv4-compatible ::/96 among them)',
    (address) => {
      expect(refusedAddress(address)).toBe('reserved IPv6 address (outside 2000::/3)');
    },
  );

  it.each(['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:93.184.216.34'])('allows the public address %s', (address) => {
    expect(refusedAddress(address)).toBeNull();
  });
});

describe('checkWebhookUrl', () => {
  it('drops the fragment and keeps the rest', async () => {
    expect(await checkWebhookUrl('https://93.184.216.34:8443/a/b?c=d#frag', false)).toBe('https://93.184.216.34:8443/a/b?c=d');
  });

  it('refuses an IPv4-compatible IPv6 literal, as written or as URL normalises it', async () => {
    for (const url of ['http://[::127.0.0.1]/', 'http://[::7f00:1]:8080/x', 'https://[::a00:1]/']) {
      await expect(checkWebhookUrl(url, false), url).rejects.toThrow(/reserved IPv6 address \(outside 2000::\/3\)/);
    }
  });

  it('allows private addresses only when told to', async () => {
    await expect(checkWebhookUrl('http://localhost:9/x', false)).rejects.toThrow(/public addresses only/);
    expect(await checkWebhookUrl('http://localhost:9/x', true)).toBe('http://localhost:9/x');
  });
});

describe('deliveryAgents', () => {
  let server: http.Server;
  let hits = 0;
  let url: string;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://localhost:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const get = (agent: http.Agent) =>
    new Promise<number>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
        .on('error', reject);
    });

  it('refuses to connect to a name that resolves to loopback (DNS rebinding), before any byte is sent', async () => {
    const agents = deliveryAgents(false);
    await expect(get(agents.http)).rejects.toThrow(/public addresses only/);
    expect(hits).toBe(0);
    agents.http.destroy();
  });

  it('connects when private addresses are allowed', async () => {
    const agents = deliveryAgents(true);
    expect(await get(agents.http)).toBe(200);
    expect(hits).toBe(1);
    agents.http.destroy();
  });
});

describe('checkedLookup (the delivery agents’ resolver)', () => {
  /** A resolver that answers `addresses` for any name, as dns.lookup does with { all: true }. */
  const resolvingTo =
    (...addresses: string[]) =>
    (_host: string, _options: unknown, callback: (err: null, found: { address: string; family: number }[]) => void) =>
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );

  const lookupWith = (resolve: ReturnType<typeof resolvingTo>, all: boolean) =>
    new Promise<{ err: Error | null; address: unknown; family?: number }>((done) =>
      checkedLookup(resolve as never)('rebound.example', { all }, (err, address, family) => done({ err, address, family })),
    );

  it('fails when a name resolves to a refused address, any one of them, ::/96 included', async () => {
    for (const addresses of [['::7f00:1'], ['93.184.216.34', '10.0.0.1'], ['2606:2800:220:1::1', '::1']]) {
      const { err } = await lookupWith(resolvingTo(...addresses), true);
      expect(err?.message, addresses.join(' ')).toMatch(/webhooks go to public addresses only/);
    }
  });

  it('answers a public address in the form asked for (one, or all)', async () => {
    expect(await lookupWith(resolvingTo('93.184.216.34'), false)).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect((await lookupWith(resolvingTo('93.184.216.34', '2606:2800:220:1::1'), true)).address).toHaveLength(2);
  });
});
