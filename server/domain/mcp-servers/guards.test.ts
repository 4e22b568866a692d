/**
 * The guard matcher: the first matching glob wins, anchored at both ends, `*` and `?` the only
 * wildcards (regular-expression characters in a glob and a tool's name are themselves), and the
 * default mode when nothing matches.
 */
import { describe, expect, it } from 'vitest';
import type { McpGuard } from '@/db/schema';
import { guardFor } from './guards';

const server = (guards: McpGuard[], defaultMode: 'allow' | 'ask' | 'deny' = 'ask') => ({ guards, defaultMode });

describe('guardFor', () => {
  it('takes the first guard that matches, in order, with its index', () => {
    const guards: McpGuard[] = [
      { tool: 'transfer', mode: 'ask', urgency: 'critical' },
      { tool: 'get_*', mode: 'allow' },
      { tool: '*', mode: 'deny' },
    ];
    expect(guardFor(server(guards), 'transfer')).toEqual({ mode: 'ask', guard: guards[0], index: 0 });
    expect(guardFor(server(guards), 'get_balance')).toEqual({ mode: 'allow', guard: guards[1], index: 1 });
    expect(guardFor(server(guards), 'delete_account')).toEqual({ mode: 'deny', guard: guards[2], index: 2 });
  });

  it('answers the default mode with no guard when none matches', () => {
    expect(guardFor(server([{ tool: 'get_*', mode: 'allow' }]), 'transfer')).toEqual({ mode: 'ask', guard: null, index: null });
    expect(guardFor(server([], 'deny'), 'anything')).toEqual({ mode: 'deny', guard: null, index: null });
    expect(guardFor(server([], 'allow'), 'anything').mode).toBe('allow');
  });

  it('is anchored: a glob matches the whole name, not a part of it', () => {
    const s = server([{ tool: 'get', mode: 'allow' }], 'deny');
    expect(guardFor(s, 'get').mode).toBe('allow');
    expect(guardFor(s, 'get_balance').mode).toBe('deny');
    expect(guardFor(s, 'forget').mode).toBe('deny');
    expect(guardFor(server([{ tool: '*_read', mode: 'allow' }], 'deny'), 'file_read_write').mode).toBe('deny');
  });

  it('`?` is exactly one character', () => {
    const s = server([{ tool: 'deploy-?', mode: 'allow' }], 'deny');
    expect(guardFor(s, 'deploy-1').mode).toBe('allow');
    expect(guardFor(s, 'deploy-12').mode).toBe('deny');
    expect(guardFor(s, 'deploy-').mode).toBe('deny');
  });

  it('treats regular-expression characters as themselves', () => {
    const s = server([{ tool: 'a.b', mode: 'allow' }], 'deny');
    expect(guardFor(s, 'a.b').mode).toBe('allow');
    expect(guardFor(s, 'axb').mode).toBe('deny');
    expect(guardFor(server([{ tool: 'x/*', mode: 'allow' }], 'deny'), 'x/y').mode).toBe('allow');
    for (const name of ['(a|b)', 'a+', '[ab]', '^a$', '.*']) {
      expect(guardFor(server([{ tool: name, mode: 'allow' }], 'deny'), 'a').mode, name).toBe('deny');
    }
  });

  it('matches in time linear-ish in the name, whatever the glob (no backtracking blow-up)', () => {
    const glob = `${'*a'.repeat(60)}b`;
    const started = performance.now();
    expect(guardFor(server([{ tool: glob, mode: 'allow' }], 'deny'), 'a'.repeat(128)).mode).toBe('deny');
    expect(performance.now() - started).toBeLessThan(200);
  });
});
