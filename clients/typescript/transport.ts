/**
 * The typed client's transport: a fetch that adds the key's Authorization and an Idempotency-Key
 * on writes, and retries what the server says to retry (503, 429, 409 idempotency_in_progress)
 * after the Retry-After it sends, and a request that got no answer at all, with the same key.
 */
export interface AwsClientOptions {
  /** The API's base address, with its version prefix: `http://127.0.0.1:3000/api/v1`. */
  baseUrl: string;
  /** A workspace API key (`awk_…`). */
  apiKey: string;
  /** How many times a request is retried on 503, 429 or 409 idempotency_in_progress (default 5). */
  retries?: number;
  /** The longest wait between two attempts, in ms, whatever Retry-After says (default 30 s). */
  maxRetryDelayMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Operations not sent again after a request got no answer: using a grant is not replayed by its
 * Idempotency-Key, so a second attempt would find the grant used by the first (grants.consume);
 * the event stream reconnects on its own, from the last event it yielded (events()).
 */
const NOT_RESENT = ['/grants/consume', '/events/stream'];

export const sleep = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/** Whether an answer is worth the same request again, after Retry-After: the server says so. */
async function retryable(response: Response): Promise<boolean> {
  if (response.status === 503 || response.status === 429) return true;
  if (response.status !== 409 || !response.headers.has('retry-after')) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => null)) as { error?: { code?: string } } | null;
  return body?.error?.code === 'idempotency_in_progress';
}

/**
 * A fetch that adds the key's Authorization, an Idempotency-Key on writes (kept across its own
 * retries), and retries what the server says to retry after the Retry-After it sends.
 */
export function retryingFetch(opts: AwsClientOptions): (input: Request) => Promise<Response> {
  const base = opts.fetch ?? globalThis.fetch;
  const retries = opts.retries ?? 5;
  const maxDelay = opts.maxRetryDelayMs ?? 30_000;
  return async (input: Request) => {
    const request = new Request(input);
    request.headers.set('authorization', `Bearer ${opts.apiKey}`);
    if (WRITES.has(request.method) && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', crypto.randomUUID());
    for (let attempt = 0; ; attempt++) {
      // A clone per attempt: a body can be sent once.
      let response: Response;
      try {
        response = await base(request.clone());
      } catch (err) {
        // No answer (a refused connection, or a kept-alive one the server had closed, as after the
        // agent was suspended): sent again with the same Idempotency-Key, so a write whose answer
        // was lost happens once. Except where a second attempt is not a replay (NOT_RESENT).
        if (attempt >= retries || request.signal.aborted || NOT_RESENT.some((p) => new URL(request.url).pathname.endsWith(p))) throw err;
        await sleep(Math.min(2 ** attempt * 250, maxDelay), request.signal);
        continue;
      }
      if (attempt >= retries || !(await retryable(response))) return response;
      const seconds = Number(response.headers.get('retry-after'));
      const wait = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 2 ** attempt * 250;
      await response.body?.cancel();
      await sleep(Math.min(wait, maxDelay), request.signal);
    }
  };
}
