/** The cipher secrets and private keys are kept under at rest (cipher.ts): what it seals opens, and only so. */
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret } from './cipher';

describe('the key cipher', () => {
  it('opens what it sealed, under the same material only', () => {
    const secret = 'whsec_c2VjcmV0IGJ5dGVzIG9mIGEgd2ViaG9vaw==';
    const sealed = encryptSecret('material', secret);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(Buffer.from(secret).toString('base64url'));
    expect(decryptSecret('material', sealed)).toBe(secret);
    expect(() => decryptSecret('other material', sealed)).toThrow();
  });

  it('seals the same secret differently each time (a fresh IV), and refuses a changed cipher text', () => {
    const a = encryptSecret('material', 'the same secret');
    const b = encryptSecret('material', 'the same secret');
    expect(a).not.toBe(b);
    const [version, iv, tag, data] = a.split('.') as [string, string, string, string];
    const flipped = Buffer.from(data, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    expect(() => decryptSecret('material', [version, iv, tag, flipped.toString('base64url')].join('.'))).toThrow();
    expect(() => decryptSecret('material', `v2.${iv}.${tag}.${data}`)).toThrow('unreadable stored secret');
  });

  it('still opens what was stored before it moved here (the format and derivation are unchanged)', () => {
    // Sealed by the webhook secrets' cipher as it was: AES-256-GCM under SHA-256("webhook-secrets:" + material).
    const stored = 'v1.AAECAwQFBgcICQoL.egaGLUWK7kYjRwm346lJ5A.rLs5xoFx03eJGxSdpQ';
    expect(decryptSecret('fixed material', stored)).toBe('a kept secret');
  });
});
