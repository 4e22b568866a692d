/**
 * Webhook signing secrets, used to sign (made in server/keys/webhook-secrets.ts).
 *
 * The service signs every delivery with the endpoint's secret, so unlike an API key it cannot
 * keep only a hash. It keeps the secret encrypted (server/keys/cipher.ts) with a key that is not in
 * the endpoints table: WEBHOOK_SECRET_KEY, or a key generated in the instance secrets. A copy of the
 * endpoints table alone does not give away the secrets.
 *
 * Signing follows the Standard Webhooks specification through its reference library: the
 * signature is `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`.
 */
import { Webhook } from 'standardwebhooks';

/**
 * The webhook-signature header: one `v1,…` signature per secret, space-separated. During a
 * rotation's grace period both the new and the previous secret sign, so a receiver still holding
 * the old one keeps verifying (as the specification allows).
 */
export function signatureHeader(secrets: readonly string[], webhookId: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body)).join(' ');
}
