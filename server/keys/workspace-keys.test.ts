/** The keys opened for signing (workspace-keys.ts): each opened once, at most `max` kept, a workspace's dropped on rotation. */
import { sign, verify, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateEd25519, OpenedKeys, openSeed, privateKeyOfSeed, publicKeyOf, sealSeed } from './workspace-keys';

describe('opened keys', () => {
  it('opens a key once, however often it is asked for', () => {
    const cache = new OpenedKeys<number>(4);
    let opens = 0;
    const open = () => ++opens;
    expect(cache.get('ws\nkid', open)).toBe(1);
    expect(cache.get('ws\nkid', open)).toBe(1);
    expect(cache.peek('ws\nkid')).toBe(1);
    expect(opens).toBe(1);
  });

  it('keeps at most `max`, dropping the oldest first, and drops a workspace’s keys when told', () => {
    const cache = new OpenedKeys<string>(3);
    for (const name of ['a\n1', 'b\n1', 'a\n2', 'c\n1']) cache.get(name, () => name);
    expect(cache.peek('a\n1')).toBeUndefined();
    expect(['b\n1', 'a\n2', 'c\n1'].map((n) => cache.peek(n))).toEqual(['b\n1', 'a\n2', 'c\n1']);
    cache.drop('a\n');
    expect(cache.peek('a\n2')).toBeUndefined();
    expect(cache.peek('b\n1')).toBe('b\n1');
  });
});

describe('workspace key pairs', () => {
  it('are sealed under the instance secret and open to a key that signs for their public half', () => {
    const settings = { appUrl: 'http://localhost:3000', secret: 'an instance secret of enough length' };
    const { seed, publicKey } = generateEd25519();
    const sealed = sealSeed(settings, seed);
    expect(sealed).not.toContain(seed.toString('base64'));
    const opened = openSeed(settings, sealed);
    expect(opened.equals(seed)).toBe(true);
    const key = privateKeyOfSeed(opened);
    expect(publicKeyOf(key).equals(publicKey)).toBe(true);
    const signature = sign(null, Buffer.from('message'), key);
    expect(verify(null, Buffer.from('message'), createPublicKey(key), signature)).toBe(true);
    expect(() => openSeed({ ...settings, secret: 'another secret' }, sealed)).toThrow();
  });
});
