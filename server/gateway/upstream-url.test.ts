/**
 * The upstream URL rule: the webhook address rule, no credentials or fragment in the URL, and the
 * operator's allowed hosts exempt from the address rule however they are spelt.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '@/server/errors';
import { checkUpstreamUrl, hostAllowed } from './upstream-url';

/** The 400 checkUpstreamUrl throws for `raw`: its code, the field it names, its message. */
async function refusal(raw: string, allow: string[] = []) {
  const err = await checkUpstreamUrl(raw, allow).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, raw).toBeInstanceOf(AppError);
  const app = err as AppError;
  return { code: app.code, paths: (app.details.issues as { path: string }[]).map((i) => i.path), message: app.message };
}

describe('hostAllowed', () => {
  it('matches a host however a URL or the operator spells it', () => {
    expect(hostAllowed('127.0.0.1', ['127.0.0.1'])).toBe(true);
    expect(hostAllowed('127.0.0.1', ['127.1'])).toBe(true);
    expect(hostAllowed('[::1]', ['::1'])).toBe(true);
    expect(hostAllowed('[::1]', ['[0:0::1]'])).toBe(true);
    expect(hostAllowed('tools.internal', ['TOOLS.internal.'])).toBe(true);
    expect(hostAllowed('tools.internal', [])).toBe(false);
  });

  it('matches whole hosts only: no suffix, prefix or wildcard', () => {
    expect(hostAllowed('evil-tools.internal', ['tools.internal'])).toBe(false);
    expect(hostAllowed('tools.internal.evil.com', ['tools.internal'])).toBe(false);
    expect(hostAllowed('a.tools.internal', ['tools.internal'])).toBe(false);
    expect(hostAllowed('127.0.0.2', ['127.0.0.1'])).toBe(false);
    expect(hostAllowed('localhost', ['127.0.0.1'])).toBe(false);
  });
});

describe('checkUpstreamUrl', () => {
  it('refuses loopback, private, link-local and metadata addresses unless the host is allowed', async () => {
    for (const url of [
      'http://127.0.0.1:9/mcp',
      'http://[::1]/mcp',
      'http://10.0.0.1/mcp',
      'http://169.254.169.254/latest',
      'http://[::ffff:192.168.0.1]/mcp',
      'http://localhost:9/mcp',
    ]) {
      const r = await refusal(url);
      expect(r.code).toBe('validation_failed');
      expect(r.paths).toEqual(['url']);
      expect(r.message).toMatch(/public addresses only .*MCP_UPSTREAM_ALLOW_HOSTS/);
    }
    expect(await checkUpstreamUrl('http://127.0.0.1:9/mcp', ['127.0.0.1'])).toBe('http://127.0.0.1:9/mcp');
    expect(await checkUpstreamUrl('http://[::1]:9/mcp', ['::1'])).toBe('http://[::1]:9/mcp');
    // Allowing one loopback host allows that one only.
    expect((await refusal('http://localhost:9/mcp', ['127.0.0.1'])).code).toBe('validation_failed');
  });

  it('passes a public address and gives the URL back as it will be called', async () => {
    expect(await checkUpstreamUrl('HTTPS://93.184.216.34:443/mcp?tenant=a', [])).toBe('https://93.184.216.34/mcp?tenant=a');
  });

  it('refuses other schemes, credentials in the URL, a fragment and what is no URL, even on an allowed host', async () => {
    const allow = ['127.0.0.1'];
    expect((await refusal('ftp://127.0.0.1/mcp', allow)).message).toMatch(/http:\/\/ or https:\/\//);
    expect((await refusal('file:///etc/passwd', allow)).message).toMatch(/http:\/\/ or https:\/\//);
    expect((await refusal('http://user:pass@127.0.0.1/mcp', allow)).message).toMatch(/user name or password.*header/);
    expect((await refusal('http://127.0.0.1/mcp#x', allow)).message).toMatch(/fragment/);
    expect((await refusal('http://127.0.0.1/mcp#', allow)).message).toMatch(/fragment/);
    expect((await refusal('/mcp', allow)).message).toMatch(/absolute/);
    expect((await refusal('http://no-such-host.invalid/mcp')).message).toMatch(/could not be resolved/);
  });
});
