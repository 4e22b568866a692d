import { describe, expect, it } from 'vitest';
import { requestOrigin } from './origin';

const h = (init: Record<string, string>) => new Headers(init);

describe('requestOrigin', () => {
  it('is the Host the browser addressed, whatever name it used', () => {
    expect(requestOrigin(h({ host: '127.0.0.1:3000' }), 0)).toBe('http://127.0.0.1:3000');
    expect(requestOrigin(h({ host: 'localhost:3000' }), 0)).toBe('http://localhost:3000');
    expect(requestOrigin(h({ host: 'WorkBox.LAN:3000' }), 0)).toBe('http://workbox.lan:3000');
    expect(requestOrigin(h({ host: '[::1]:3000' }), 0)).toBe('http://[::1]:3000');
    expect(requestOrigin(h({ host: 'example.com:80' }), 0)).toBe('http://example.com');
  });

  it('ignores forwarding headers unless proxies are trusted', () => {
    const headers = h({ host: '127.0.0.1:3000', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
    expect(requestOrigin(headers, 0)).toBe('http://127.0.0.1:3000');
    expect(requestOrigin(headers, 1)).toBe('https://evil.example');
  });

  it('takes the entry the outermost trusted proxy wrote', () => {
    const headers = h({
      host: '10.0.0.5:3000',
      'x-forwarded-host': 'spoofed.example, work.example.com, internal-lb:8080',
      'x-forwarded-proto': 'http, https, http',
    });
    expect(requestOrigin(headers, 1)).toBe('http://internal-lb:8080');
    expect(requestOrigin(headers, 2)).toBe('https://work.example.com');
    // More hops configured than entries: the first entry, never a client-chosen position beyond it.
    expect(requestOrigin(h({ host: 'a:1', 'x-forwarded-host': 'work.example.com', 'x-forwarded-proto': 'https' }), 3)).toBe(
      'https://work.example.com',
    );
  });

  it('falls back to Host when a trusted proxy sent no X-Forwarded-Host', () => {
    expect(requestOrigin(h({ host: 'work.example.com' }), 1)).toBe('http://work.example.com');
  });

  it('is null for a missing or malformed address', () => {
    expect(requestOrigin(h({}), 0)).toBeNull();
    expect(requestOrigin(h({ host: 'a.example/path' }), 0)).toBeNull();
    expect(requestOrigin(h({ host: 'user@a.example' }), 0)).toBeNull();
    expect(requestOrigin(h({ host: 'a.example', 'x-forwarded-proto': 'javascript' }), 1)).toBeNull();
  });
});
