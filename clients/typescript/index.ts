/**
 * A typed client of the Accountable Work Service's REST API v1: `openapi-fetch` over the types
 * `openapi-typescript` generates from the served OpenAPI document (schema.d.ts, kept in step with
 * the server by `npm run client:generate`; CI fails when they differ), and three things every agent
 * needs and should not write itself:
 *
 * - an `Idempotency-Key` on every write (a UUID unless the caller gives one), the same key on each
 *   of the client's own retries, so a write retried after a lost answer happens once;
 * - retries of 503 (the database unavailable or busy) and 429 (rate limited), and of 409
 *   `idempotency_in_progress`, after the `Retry-After` the server sends; and of a request that got
 *   no answer at all (a refused or closed connection), with the same key;
 * - `events()`: an async iterator over the workspace's event stream (server-sent event leases, one
 *   after another), which resumes from the last event it yielded when a lease ends or is cut, and
 *   checks each event's `previousHash` against the `eventHash` before it.
 *
 * For an agent's loop, `claim()` (the next ready task, its run started: POST /tasks/claim) and
 * `withLease()` (heartbeats at a third of the lease while the work runs; the work's signal aborts
 * when the lease is lost). And for a tool server, `grants.consume()`: use an approval's grant once,
 * for the action it is about to run, or learn why not (GrantRefusedError). For what agents deliver,
 * `artifacts.register()` (the bytes hashed here and checked by the server: what arrives is what
 * was sent) and `artifacts.download()` (the bytes, checked against their digest).
 *
 * Usage:
 *   const aws = createAwsClient({ baseUrl: 'http://127.0.0.1:3000/api/v1', apiKey });
 *   const { data, error } = await aws.api.POST('/work', { body: { title: 'Write the report' } });
 *   const claimed = await aws.claim({ agentId: 'agent-1' });
 *   if (claimed) await aws.withLease(claimed.run, (signal) => doTheWork(claimed.task, signal));
 *   for await (const event of aws.events({ signal })) …
 *   await aws.grants.consume(token, actionDigest);
 */
import createClient, { type Client } from 'openapi-fetch';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { components, paths } from './schema';
import { retryingFetch, sleep, type AwsClientOptions } from './transport';

export type { components, paths } from './schema';
export type { AwsClientOptions } from './transport';

/** A ledger event as the event stream carries it. */
export type LedgerEvent = components['schemas']['EventPage']['data'][number];

/** The chain did not hold: an event's previousHash is not the eventHash of the event before it. */
export class ChainBreakError extends Error {
  constructor(
    readonly event: LedgerEvent,
    readonly expectedPreviousHash: string,
  ) {
    super(`event ${event.sequence} (${event.id}) links to ${event.previousHash}, not to ${expectedPreviousHash}`);
  }
}

/**
 * A grant the server would not consume: `code` is grant_used, grant_mismatch, grant_expired or approval_stale (409),
 * grant_not_yours (403: the grant is another key's), or the error's code.
 */
export class GrantRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** A claimed task and its run (POST /tasks/claim). */
export type Claimed = NonNullable<components['schemas']['ClaimResponse']['data']>;

/** A run as withLease needs it: its id and the length of its lease. */
export interface LeasedRun {
  runId: string;
  lease_seconds: number;
}

/**
 * The run no longer holds its lease: `code` is lease_expired (it lapsed; the task may be another
 * agent's) or invalid_state_transition (the run stopped running: paused, cancelled, finished).
 * Stop working on the task.
 */
export class LeaseLostError extends Error {
  constructor(
    readonly runId: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** An artifact as the API shows it (POST /artifacts, GET /artifacts/{id}). */
export type Artifact = components['schemas']['Artifact'];

/** What to register with artifacts.register(): the bytes themselves (at most 1 MiB), stored by the service. */
export interface ArtifactInput {
  artifactType: string;
  title: string;
  mediaType: string;
  /** The bytes (a string is taken as UTF-8). */
  content: Uint8Array | string;
  taskId?: string;
  runId?: string;
  metadata?: Record<string, unknown>;
}

/** Downloaded bytes whose SHA-256 is not the artifact's digest: they are not what was registered. */
export class DigestMismatchError extends Error {
  constructor(
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`the bytes' digest is ${actual}, not ${expected}`);
  }
}

/** `sha256:` and the hex of the SHA-256 of `bytes` (Web Crypto: Node and browsers alike). */
export async function sha256Digest(bytes: Uint8Array): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return `sha256:${Array.from(hash, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** What POST /grants/consume answers: the grant used, and when. */
export type GrantConsumed = components['schemas']['GrantConsumed']['data'];

export interface EventsOptions {
  /** Start after this cursor (a `meta.nextCursor`, or an event's SSE id); default: from the first event. */
  cursor?: string;
  /** The eventHash of the event before the first one yielded, when known: its link is checked too. */
  previousHash?: string;
  /** Only events of these types (their links are then not checked: the events between them are not read). */
  types?: string[];
  /** Ends the iteration (the open lease is closed). */
  signal?: AbortSignal;
  /** How long a lease lasts, in ms (the server's default when not given). */
  leaseMs?: number;
  /** The wait before reopening a lease that was cut (doubling up to 10 s). Default 250 ms. */
  reconnectDelayMs?: number;
}

export interface ClaimOptions {
  /** Who takes the task (the run's agent_id). */
  agentId: string;
  /** As GET /tasks takes them; the task is always a ready one. */
  filters?: NonNullable<paths['/tasks/claim']['post']['requestBody']>['content']['application/json']['filters'];
  /** The run's lease, 5–3600 seconds (default 300). */
  leaseSeconds?: number;
}

export interface AwsClient {
  /** Every operation of the API, typed from the OpenAPI document (openapi-fetch). */
  api: Client<paths, 'application/json'>;
  /**
   * The workspace's events in order, from `cursor` on, for as long as the caller iterates: SSE
   * leases one after another, resumed from the last event yielded when one ends or is cut. Each
   * event's previousHash is checked against the eventHash of the one before (ChainBreakError
   * when it does not match). With `types`, only events of those types come, so the links between
   * them cannot be checked and are not.
   */
  events(options?: EventsOptions): AsyncGenerator<LedgerEvent>;
  /**
   * Claims the next ready task (POST /tasks/claim: urgent first, then oldest, with `filters`) and
   * starts its run, holding a lease of `leaseSeconds` (default 300). null when nothing is ready.
   * Retried on a lost answer with the same Idempotency-Key, so a retry gets the same claim.
   */
  claim(options: ClaimOptions): Promise<Claimed | null>;
  /**
   * Runs `work` while keeping the run's lease: a heartbeat at a third of lease_seconds. When the
   * lease is lost (LeaseLostError: it lapsed, or the run stopped running), `work`'s signal aborts
   * with that error and withLease rejects with it, whether or not `work` heeds the signal; `work`
   * should stop and write nothing more. Heartbeats stop when `work` settles.
   */
  withLease<T>(run: LeasedRun, work: (signal: AbortSignal) => Promise<T>): Promise<T>;
  grants: {
    /**
     * Uses the grant `token` for the action whose digest is `actionDigest` (`sha256:` + hex of
     * SHA-256 over its RFC 8785 text: compute it from what you will run). Resolves once it is used
     * up; throws GrantRefusedError when it was not (used already, another action, expired, stale, or
     * not this key's: a grant is used by the key that raised its decision, its token's `azp`).
     * Not retried on a lost answer: a retry would find the grant used, by the first attempt.
     */
    consume(token: string, actionDigest: string): Promise<GrantConsumed>;
  };
  artifacts: {
    /**
     * Registers an artifact with its bytes (POST /artifacts): hashed here and sent with their
     * digest and size, which the server checks, so a registration is of exactly these bytes.
     */
    register(input: ArtifactInput): Promise<Artifact>;
    /** An artifact's stored bytes, checked against its digest (DigestMismatchError otherwise). */
    download(id: string): Promise<{ artifact: Artifact; bytes: Uint8Array }>;
  };
}

export function createAwsClient(opts: AwsClientOptions): AwsClient {
  const fetch = retryingFetch(opts);
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const api = createClient<paths, 'application/json'>({ baseUrl, fetch });

  async function* events(options: EventsOptions = {}): AsyncGenerator<LedgerEvent> {
    let cursor = options.cursor;
    let lastHash = options.previousHash;
    let lastSequence = 0;
    let delay = options.reconnectDelayMs ?? 250;
    const checkLinks = !options.types || options.types.length === 0;
    while (!options.signal?.aborted) {
      const url = new URL(`${baseUrl}/events/stream`);
      url.searchParams.set('format', 'sse');
      if (options.leaseMs) url.searchParams.set('lease_ms', String(options.leaseMs));
      for (const type of options.types ?? []) url.searchParams.append('type', type);
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (cursor) headers['last-event-id'] = cursor;
      let response: Response;
      try {
        response = await fetch(new Request(url, { headers, signal: options.signal }));
      } catch {
        if (options.signal?.aborted) return;
        // The server is not reachable (restarting?): try again, waiting longer each time.
        await sleep(delay, options.signal).catch(() => undefined);
        delay = Math.min(delay * 2, 10_000);
        continue;
      }
      if (!response.ok || !response.body) {
        const text = await response.text().catch(() => '');
        throw new Error(`GET /events/stream answered ${response.status}: ${text.slice(0, 300)}`);
      }
      const frames = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
      let ended = false;
      try {
        for (let next = await frames.read(); !next.done; next = await frames.read()) {
          const frame = next.value;
          if (frame.event === 'lease_end') {
            const next = (JSON.parse(frame.data) as { nextCursor?: string | null }).nextCursor;
            if (next) cursor = next;
            ended = true;
            break;
          }
          const event = JSON.parse(frame.data) as LedgerEvent;
          // A lease resumed after a cut may repeat what was already yielded.
          if (event.sequence <= lastSequence) continue;
          if (checkLinks && lastHash !== undefined && event.previousHash !== lastHash) throw new ChainBreakError(event, lastHash);
          lastHash = event.eventHash;
          lastSequence = event.sequence;
          if (frame.id) cursor = frame.id;
          delay = options.reconnectDelayMs ?? 250;
          yield event;
        }
      } catch (err) {
        if (err instanceof ChainBreakError) throw err;
        if (options.signal?.aborted) return;
        // The lease was cut mid-stream: reopened below from the last event yielded.
      } finally {
        await frames.cancel().catch(() => undefined);
      }
      if (!ended) {
        await sleep(delay, options.signal).catch(() => undefined);
        delay = Math.min(delay * 2, 10_000);
      }
    }
  }

  async function consume(token: string, actionDigest: string): Promise<GrantConsumed> {
    const { data, error, response } = await api.POST('/grants/consume', { body: { token, action_digest: actionDigest } });
    if (data) return data.data;
    const e = (error as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | undefined)?.error;
    throw new GrantRefusedError(response.status, e?.code ?? 'unknown', e?.message ?? `answered ${response.status}`, e?.details ?? {});
  }

  async function claim(options: ClaimOptions): Promise<Claimed | null> {
    const { data, error, response } = await api.POST('/tasks/claim', {
      body: { agent_id: options.agentId, filters: options.filters, lease_seconds: options.leaseSeconds },
    });
    if (response.status === 204) return null;
    if (data?.data) return data.data;
    throw new Error(`POST /tasks/claim answered ${response.status}: ${JSON.stringify(error)}`);
  }

  async function withLease<T>(run: LeasedRun, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    let lost: LeaseLostError | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const every = (run.lease_seconds * 1000) / 3;
    const beat = async () => {
      const { error, response } = await api.POST('/runs/{runId}/heartbeat', { params: { path: { runId: run.runId } } }).catch(() => ({
        // Not reachable: try again at the next beat (two more before the lease lapses).
        error: undefined,
        response: undefined,
      }));
      if (stopped) return;
      const code = (error as { error?: { code?: string; message?: string } } | undefined)?.error;
      if (response && response.status === 409 && code?.code) {
        lost = new LeaseLostError(run.runId, code.code, code.message ?? 'the run lost its lease');
        controller.abort(lost);
        return;
      }
      timer = setTimeout(() => void beat(), every);
    };
    timer = setTimeout(() => void beat(), every);
    const gone = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(lost), { once: true }));
    gone.catch(() => undefined);
    try {
      return await Promise.race([work(controller.signal), gone]);
    } finally {
      stopped = true;
      clearTimeout(timer);
    }
  }

  async function register(input: ArtifactInput): Promise<Artifact> {
    const bytes = typeof input.content === 'string' ? new TextEncoder().encode(input.content) : input.content;
    const { data, error, response } = await api.POST('/artifacts', {
      body: {
        artifact_type: input.artifactType,
        title: input.title,
        media_type: input.mediaType,
        content: base64(bytes),
        sha256: await sha256Digest(bytes),
        size_bytes: bytes.length,
        task_id: input.taskId,
        run_id: input.runId,
        metadata: input.metadata,
      },
    });
    if (data) return data.data;
    throw new Error(`POST /artifacts answered ${response.status}: ${JSON.stringify(error)}`);
  }

  async function download(id: string): Promise<{ artifact: Artifact; bytes: Uint8Array }> {
    const { data, error, response } = await api.GET('/artifacts/{id}', { params: { path: { id } } });
    if (!data) throw new Error(`GET /artifacts/${id} answered ${response.status}: ${JSON.stringify(error)}`);
    const artifact = data.data;
    const answer = await fetch(new Request(`${baseUrl}/artifacts/${encodeURIComponent(id)}/content`));
    if (!answer.ok) throw new Error(`GET /artifacts/${id}/content answered ${answer.status}: ${await answer.text()}`);
    const bytes = new Uint8Array(await answer.arrayBuffer());
    const actual = await sha256Digest(bytes);
    if (actual !== artifact.digest) throw new DigestMismatchError(artifact.digest, actual);
    return { artifact, bytes };
  }

  return { api, events, claim, withLease, grants: { consume }, artifacts: { register, download } };
}
