import { describe, expect, it } from 'vitest';
import { safeReturnTo } from './return-to';

describe('safeReturnTo', () => {
  it('keeps paths of this app', () => {
    expect(safeReturnTo('/decisions/abc?x=1')).toBe('/decisions/abc?x=1');
    expect(safeReturnTo('/settings/api-keys')).toBe('/settings/api-keys');
    expect(safeReturnTo('/decisions?q=%2F%2Fevil.com#top')).toBe('/decisions?q=%2F%2Fevil.com#top');
  });

  it('normalises dot segments, keeping what stays a path', () => {
    expect(safeReturnTo('/./decisions')).toBe('/decisions');
    expect(safeReturnTo('/a/../settings')).toBe('/settings');
    expect(safeReturnTo('/a/b/../../inbox?x=1')).toBe('/inbox?x=1');
  });

  it('refuses anything that could leave the app', () => {
    for (const bad of [
      '//evil.com',
      '/\\evil.com',
      '/\t/evil.com',
      '/\n/evil.com',
      'https://evil.com',
      'evil.com',
      '\\\\evil.com',
      'javascript:alert(1)',
    ]) {
      expect(safeReturnTo(bad), JSON.stringify(bad)).toBe('/decisions');
    }
    expect(safeReturnTo(undefined)).toBe('/decisions');
    expect(safeReturnTo('/x'.repeat(2000))).toBe('/decisions');
  });

  it('refuses what only normalising turns into another origin', () => {
    for (const bad of [
      '/.//evil.com',
      '/./\u002f/evil.com',
      '/a/..//evil.com/x',
      '/a/b/../..//evil.com',
      '/.//evil.com?x=1',
      '/%2e//evil.com',
    ]) {
      expect(safeReturnTo(bad), JSON.stringify(bad)).toBe('/decisions');
    }
  });

  it('refuses encoded slashes and backslashes where a host could start', () => {
    for (const bad of ['/%2F%2Fevil.com', '/%2f/evil.com', '/%5Cevil.com', '/%5cevil.com', '/.//%2Fevil.com', '/./%5Cevil.com']) {
      expect(safeReturnTo(bad), JSON.stringify(bad)).toBe('/decisions');
    }
  });

  it('uses the fallback it is given', () => {
    expect(safeReturnTo('/.//evil.com', '/inbox')).toBe('/inbox');
  });
});
