import { describe, expect, it } from 'vitest';
import { safeReturnTo } from './return-to';

describe('safeReturnTo', () => {
  it('keeps paths of this app', () => {
    expect(safeReturnTo('/decisions/abc?x=1')).toBe('/decisions/abc?x=1');
    expect(safeReturnTo('/settings/api-keys')).toBe('/settings/api-keys');
  });

  it('refuses anything that could leave the app', () => {
    for (const bad of [
      '//evil.com',
      '/\\evil.com',
      '/\t/evil.com',
      '/%09/evil.com'.replace('%09', '\t'),
      'https://evil.com',
      'evil.com',
      '/\n/evil.com',
      '\\\\evil.com',
      'javascript:alert(1)',
    ]) {
      expect(safeReturnTo(bad), JSON.stringify(bad)).toBe('/decisions');
    }
    expect(safeReturnTo(undefined)).toBe('/decisions');
    expect(safeReturnTo('/x'.repeat(2000))).toBe('/decisions');
  });
});
