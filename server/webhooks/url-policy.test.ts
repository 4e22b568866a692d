import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl, deliveryAgents, refusedAddress } from './url-policy';

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
  ])('refuses %s (%s)', (address, range) => {
    expect(refusedAddress(address)).toBe(`${range} address`);
  });

  it.each(['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:93.184.216.34'])('allows the public address %s', (address) => {
    expect(refusedAddress(address)).toBeNull();
  });
});

describe('checkWebhookUrl', () => {
  it('drops the fragment and keeps the rest', async () => {
    expect(await checkWebhookUrl('https://93.184.216.34:8443/a/b?c=d#frag', false)).toBe('https://93.184.216.34:8443/a/b?c=d');
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
    await expect(get(agents.http)).rejects.toThrow(/not allowed/);
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
