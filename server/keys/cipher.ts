/**
 * The cipher every secret the service must read back is kept under at rest: webhook signing
 * secrets, and the private halves of the workspaces' checkpoint and grant keys. AES-256-GCM with a
 * key derived from an instance secret that is not in the table holding the cipher text, so a copy
 * of that table alone gives nothing away; GCM's tag makes a changed cipher text fail to open
 * rather than open to something else.
 *
 * The format and the key derivation are those webhook secrets were first stored with, so every
 * cipher text already stored still opens.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

function keyOf(material: string): Buffer {
  return createHash('sha256').update(`webhook-secrets:${material}`).digest();
}

/** `v1.<iv>.<tag>.<ciphertext>`, each base64url, under the key derived from `material`. */
export function encryptSecret(material: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(material), iv);
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
}

/** The secret `stored` holds; throws when it is not one of ours or was sealed under other material. */
export function decryptSecret(material: string, stored: string): string {
  const [version, iv, tag, data] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('unreadable stored secret');
  const decipher = createDecipheriv('aes-256-gcm', keyOf(material), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}
