import { describe, expect, it } from 'vitest';
import { appOrigins, isAppOrigin } from './origin';

describe('appOrigins', () => {
  it('is APP_URL’s origin alone for a name of the network', () => {
    expect(appOrigins('https://work.example.com')).toEqual(['https://work.example.com']);
    expect(appOrigins('https://work.example.com:8443/some/path')).toEqual(['https://work.example.com:8443']);
    expect(appOrigins('http://workbox.lan:3000')).toEqual(['http://workbox.lan:3000']);
    // 127.0.0.2 is loopback too, but not a spelling npm start's default invites.
    expect(appOrigins('http://127.0.0.2:3000')).toEqual(['http://127.0.0.2:3000']);
  });

  it('adds the other loopback spellings, same scheme and port, when APP_URL is loopback', () => {
    expect(appOrigins('http://localhost:3000')).toEqual(['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000']);
    expect(appOrigins('http://127.0.0.1:3100')).toEqual(['http://127.0.0.1:3100', 'http://localhost:3100', 'http://[::1]:3100']);
    expect(appOrigins('https://[::1]')).toEqual(['https://[::1]', 'https://localhost', 'https://127.0.0.1']);
    // URL drops a default port, as browsers do when they write Origin.
    expect(appOrigins('https://LOCALHOST:443/')).toEqual(['https://localhost', 'https://127.0.0.1', 'https://[::1]']);
  });
});

describe('isAppOrigin', () => {
  it('accepts the app’s origins and nothing else', () => {
    const appUrl = 'http://localhost:3000';
    expect(isAppOrigin('http://localhost:3000', appUrl)).toBe(true);
    expect(isAppOrigin('http://127.0.0.1:3000', appUrl)).toBe(true);
    expect(isAppOrigin('http://[::1]:3000', appUrl)).toBe(true);
    for (const other of [
      'http://127.0.0.1:3999',
      'https://localhost:3000',
      'http://evil.example',
      'http://workbox.lan:3000',
      'http://localhost:3000.evil.example',
      'null',
      '',
    ]) {
      expect(isAppOrigin(other, appUrl), other).toBe(false);
    }
    expect(isAppOrigin('https://work.example.com', 'https://work.example.com')).toBe(true);
    expect(isAppOrigin('http://localhost', 'https://work.example.com')).toBe(false);
    expect(isAppOrigin('http://work.example.com', 'https://work.example.com')).toBe(false);
  });
});
