/**
 * Webhook signing secrets, made. The service signs every delivery with the endpoint's secret
 * (server/webhooks/secrets.ts), so unlike an API key it cannot keep only a hash: it keeps the
 * secret encrypted at rest (cipher.ts) with a key that is not in the endpoints table.
 */
import { randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A new secret: 32 random bytes, base64, after `whsec_` (the form Standard Webhooks libraries take). */
export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}
