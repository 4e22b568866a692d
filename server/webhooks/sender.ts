/**
 * Sending one event to a webhook endpoint over HTTP: the signed POST, its deadline, what the
 * receiver answered, and failures said in words its owner can act on. Each connection's address is
 * checked by the delivery agents (server/webhooks/url-policy.ts); the dispatcher
 * (server/webhooks/dispatcher.ts) decides what to send when, and records what came of it.
 */
import http from 'node:http';
import https from 'node:https';
import type { webhookEndpoints } from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { decryptSecret } from '@/server/keys/cipher';
import { signatureHeader } from './secrets';
import { deliveryAgents } from './url-policy';

/** Characters of a receiver's answer kept with the attempt. */
const EXCERPT_CHARS = 1000;

export interface Outcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  excerpt: string | null;
  durationMs: number;
  /** Cut short because the service is stopping: not recorded, delivered again later. */
  aborted: boolean;
}

/**
 * The secrets an endpoint's deliveries are signed with: its own, and for a while after a rotation
 * the one it replaced too, so a receiver can switch over without missing a delivery.
 */
export function signingSecrets(key: string, row: typeof webhookEndpoints.$inferSelect): string[] {
  const secrets = [decryptSecret(key, row.secretCipher)];
  if (row.previousSecretCipher && row.previousSecretExpiresAt && row.previousSecretExpiresAt.getTime() > Date.now()) {
    secrets.push(decryptSecret(key, row.previousSecretCipher));
  }
  return secrets;
}

export class WebhookSender {
  private readonly requests = new Set<http.ClientRequest>();
  private readonly agents;

  constructor(
    allowPrivate: boolean,
    private readonly timeoutMs: number,
  ) {
    this.agents = deliveryAgents(allowPrivate);
  }

  /** Cuts short the requests in flight: their outcomes say `aborted`. */
  abort(): void {
    for (const request of this.requests) request.destroy(new StoppingError());
  }

  /** Closes the agents' connections (once nothing more is sent). */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /**
   * POSTs the event, exactly as GET /events/stream serves it, signed. Redirects are not followed
   * (a 3xx is a failure); each connection's address is checked (server/webhooks/url-policy.ts).
   */
  send(url: string, event: LedgerEvent, secrets: string[]): Promise<Outcome> {
    const body = JSON.stringify(event);
    const at = new Date();
    const started = performance.now();
    const target = new URL(url);
    const client = target.protocol === 'https:' ? https : http;
    const agent = target.protocol === 'https:' ? this.agents.https : this.agents.http;
    const timeoutMs = this.timeoutMs;
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      const finish = (o: Omit<Outcome, 'durationMs' | 'aborted'> & { aborted?: boolean }) => {
        if (settled) return;
        settled = true;
        resolve({ aborted: false, ...o, durationMs: Math.round(performance.now() - started) });
      };
      const request = client.request(target, {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'AccountableWorkService-Webhooks/1',
          'webhook-id': event.id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signatureHeader(secrets, event.id, at, body),
        },
      });
      this.requests.add(request);
      // One deadline for the whole exchange: connecting, sending, and the answer to its end.
      const timer = setTimeout(() => request.destroy(new TimeoutError(timeoutMs)), timeoutMs);
      request.on('response', (response) => {
        let excerpt = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (excerpt.length < EXCERPT_CHARS) excerpt += chunk.slice(0, EXCERPT_CHARS - excerpt.length);
        });
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          finish({ ok, statusCode: status, error: ok ? null : `HTTP ${status}`, excerpt: excerpt || null });
        });
        response.on('error', () => undefined);
      });
      request.on('error', (err) => {
        if (err instanceof StoppingError) return finish({ ok: false, statusCode: null, error: null, excerpt: null, aborted: true });
        finish({ ok: false, statusCode: null, error: describeFailure(err), excerpt: null });
      });
      request.on('close', () => {
        clearTimeout(timer);
        this.requests.delete(request);
        finish({ ok: false, statusCode: null, error: 'The connection closed before an answer.', excerpt: null });
      });
      request.end(body);
    });
  }
}

class StoppingError extends Error {}

class TimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`No complete answer within ${ms} ms.`);
  }
}

/** A failure without an HTTP status, in words a receiver's owner can act on. */
function describeFailure(err: Error): string {
  if (err instanceof TimeoutError) return err.message;
  const code = (err as NodeJS.ErrnoException).code;
  if (/not allowed/.test(err.message)) return 'Refused: the address is not a public one (WEBHOOKS_ALLOW_PRIVATE).';
  if (code === 'ECONNREFUSED') return 'Connection refused.';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'The host could not be resolved.';
  if (code === 'ECONNRESET') return 'The connection was reset.';
  return code ? `Connection failed (${code}).` : 'Connection failed.';
}
