/**
 * Webhook signing secrets: made, encrypted at rest, and used to sign.
 *
 * The service signs every delivery with the endpoint's secret, so unlike an API key it cannot
 * keep only a hash. It keeps the secret encrypted (AES-256-GCM) with a key that is not in the
 * endpoints table: WEBHOOK_SECRET_KEY, or a key generated in the instance secrets. A copy of the
 * endpoints table alone does not give away the secrets.
 *
 * Signing follows the Standard Webhooks specification through its reference library: the
 * signature is `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

const SECRET_PREFIX = 'whsec_';

/** A new secret: 32 random bytes, base64, after `whsec_` (the form Standard Webhooks libraries take). */
export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

function keyOf(material: string): Buffer {
  return createHash('sha256').update(`webhook-secrets:${material}`).digest();
}

/** `v1.<iv>.<tag>.<ciphertext>`, each base64url. */
export function encryptSecret(material: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(material), iv);
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
}

export function decryptSecret(material: string, stored: string): string {
  const [version, iv, tag, data] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('unreadable webhook secret');
  const decipher = createDecipheriv('aes-256-gcm', keyOf(material), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * The webhook-signature header: one `v1,…` signature per secret, space-separated. During a
 * rotation's grace period both the new and the previous secret sign, so a receiver still holding
 * the old one keeps verifying (as the specification allows).
 */
export function signatureHeader(secrets: readonly string[], webhookId: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body)).join(' ');
}
