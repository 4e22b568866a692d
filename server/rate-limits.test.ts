import { describe, expect, it } from 'vitest';
import { clientAddress, isExceeded, rateLimitHeaders, secondsToReset, usageOf, windowStartOf } from './rate-limits';

const xff = (value?: string) => new Headers(value === undefined ? {} : { 'x-forwarded-for': value });

describe('clientAddress', () => {
  it('is the last X-Forwarded-For entry (the peer our server appended) with no trusted proxy', () => {
    expect(clientAddress(xff('198.51.100.4'), 0)).toBe('198.51.100.4');
    // Whatever the client wrote is to the left of what our server appended, and ignored.
    expect(clientAddress(xff('1.2.3.4, 5.6.7.8, 198.51.100.4'), 0)).toBe('198.51.100.4');
  });

  it('steps left one entry per trusted proxy, and never past the first', () => {
    expect(clientAddress(xff('203.0.113.9, 10.0.0.2'), 1)).toBe('203.0.113.9');
    expect(clientAddress(xff('spoofed, 203.0.113.9, 10.0.0.3, 10.0.0.2'), 2)).toBe('203.0.113.9');
    expect(clientAddress(xff('10.0.0.2'), 3)).toBe('10.0.0.2');
  });

  it('counts an IPv6 client by its /64 network, whatever the spelling', () => {
    expect(clientAddress(xff('2001:DB8::1'), 0)).toBe('2001:db8:0:0::/64');
    expect(clientAddress(xff('2001:db8:0:0:ffff:ffff:ffff:ffff'), 0)).toBe('2001:db8:0:0::/64');
    expect(clientAddress(xff('2001:0db8:0000:0001::9'), 0)).toBe('2001:db8:0:1::/64');
    expect(clientAddress(xff('::1'), 0)).toBe('0:0:0:0::/64');
    expect(clientAddress(xff('64:ff9b::192.0.2.1'), 0)).toBe('64:ff9b:0:0::/64');
    expect(clientAddress(xff('fe80::1%eth0'), 0)).toBe('fe80:0:0:0::/64');
  });

  it('treats an IPv4-mapped IPv6 peer as its IPv4 address, junk as one bucket, and no header as "unknown"', () => {
    expect(clientAddress(xff('::ffff:127.0.0.1'), 0)).toBe('127.0.0.1');
    expect(clientAddress(xff('<script>'), 0)).toBe('not-an-address');
    expect(clientAddress(xff(), 0)).toBe('unknown');
    expect(clientAddress(xff(' , '), 0)).toBe('unknown');
  });
});

describe('windows', () => {
  const at = (iso: string) => new Date(iso);

  it('are whole minutes; Retry-After is what is left of one, rounded up, at least 1 s', () => {
    expect(windowStartOf(at('2026-11-23T10:15:42.300Z')).toISOString()).toBe('2026-11-23T10:15:00.000Z');
    const usage = usageOf(60, 61, at('2026-11-23T10:15:42.300Z'));
    expect(usage.resetAt.toISOString()).toBe('2026-11-23T10:16:00.000Z');
    expect(secondsToReset(usage, at('2026-11-23T10:15:42.300Z'))).toBe(18);
    expect(secondsToReset(usage, at('2026-11-23T10:15:59.999Z'))).toBe(1);
    expect(secondsToReset(usage, at('2026-11-23T10:16:00.000Z'))).toBe(1);
  });

  it('exceed the limit only past it, and the headers say what is left', () => {
    const now = at('2026-11-23T10:15:00.000Z');
    expect(isExceeded(usageOf(3, 3, now))).toBe(false);
    expect(isExceeded(usageOf(3, 4, now))).toBe(true);
    expect(rateLimitHeaders(usageOf(3, 1, now))).toEqual({
      'X-RateLimit-Limit': '3',
      'X-RateLimit-Remaining': '2',
      'X-RateLimit-Reset': String(Date.parse('2026-11-23T10:16:00.000Z') / 1000),
    });
    expect(rateLimitHeaders(usageOf(3, 9, now))['X-RateLimit-Remaining']).toBe('0');
  });
});
