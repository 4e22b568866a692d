/**
 * The MCP sessions of this process, and what its calls share: the waits under way, the calls
 * running, and whether the service is stopping.
 *
 * A session (Mcp-Session-Id; server/mcp/transport.ts's McpSession, a few fields) is bound to the
 * key that opened it: another key presenting the id is told it is unknown, as an unknown id is,
 * and a client told so starts a new session (the protocol's rule), so after a restart, or on
 * another instance, nothing is lost but the handshake. One key holds at most MCP_SESSIONS_PER_KEY
 * of them here, and a session whose client has sent nothing for MCP_SESSION_IDLE_MS (default 30
 * minutes), with no POST of it unanswered, is closed by a sweep.
 */
import { randomUUID } from 'node:crypto';
import { admitWaiter } from '@/server/capacity';
import { AppError } from '@/server/errors';
import { countRefusal } from '@/server/metrics';
import type { Runtime } from '@/server/runtime';
import { ServerCatalog } from '@/server/gateway/catalog';
import { refreshOnToolsChanged } from '@/server/gateway/refresh';
import { UpstreamPool } from '@/server/gateway/upstream';
import type { RestHandle } from './call';
import { PendingAnswers } from './answers';
import { McpSession } from './transport';
import type { DecisionWatch } from './wait';

/** What answering a request needs beyond the request: the runtime and the REST transport, and what the process's calls share. */
export interface McpContext {
  runtime: Runtime;
  handle: RestHandle;
  /** True once the service is stopping: a wait that begins answers at once. */
  stopping(): boolean;
  /** Waits under way in this process: stopping ends each (it answers the decision as it stands). */
  waits: Set<DecisionWatch>;
  /** Requests under way in this process (stopping lets them answer before the database closes). */
  calls: { running: number };
  /** Gateway calls' answers still to be recorded (server/mcp/answers.ts): stopping records them. */
  answers: PendingAnswers;
  /** The upstream servers as this process last read them (their guards, their tools). */
  servers: ServerCatalog;
  /** The connections to the upstream MCP servers the gateway calls (made with the first call). */
  upstreams(): UpstreamPool;
}

const SWEEP_MS = 60_000;

/** How long stopping lets the calls under way answer before the sessions close. */
const DRAIN_MS = 5_000;

export class McpSessions {
  private readonly byId = new Map<string, McpSession>();
  /** Waits under way (see McpContext.waits). */
  readonly waits = new Set<DecisionWatch>();
  /** Requests under way (see McpContext.calls). */
  readonly calls = { running: 0 };
  /** Servers as last read (see McpContext.servers). */
  readonly servers = new ServerCatalog();
  /** Answers to record (see McpContext.answers). */
  readonly answers = new PendingAnswers();
  private stopped = false;
  private pool: UpstreamPool | null = null;
  /** Started with the first session, so a table never used costs no timer. */
  private sweep: NodeJS.Timeout | null = null;

  /** Open sessions (the metrics, the tests). */
  get size(): number {
    return this.byId.size;
  }

  /**
   * The gateway's upstream connections, made on first use with the operator's allowed hosts; an
   * upstream that says its tools changed is listed again.
   */
  upstreams(runtime: Runtime): UpstreamPool {
    this.pool ??= new UpstreamPool(runtime.env.MCP_UPSTREAM_ALLOW_HOSTS, refreshOnToolsChanged(runtime));
    return this.pool;
  }

  /** An arrow, to be handed on as McpContext.stopping. */
  readonly stopping = (): boolean => this.stopped;

  /** The session `id` names, when `keyId` opened it (another key's is as unknown as a missing one). */
  find(id: string, keyId: string): McpSession | undefined {
    const session = this.byId.get(id);
    return session?.keyId === keyId ? session : undefined;
  }

  /** A session for `keyId`'s initialize: admitted while memory and the key's share allow (else 503, 429). */
  open(env: Runtime['env'], keyId: string): McpSession {
    admitWaiter(env.WAITERS_HEAP_PERCENT);
    let held = 0;
    for (const s of this.byId.values()) if (s.keyId === keyId) held++;
    if (held >= env.MCP_SESSIONS_PER_KEY) {
      countRefusal('mcp_sessions');
      throw new AppError(
        'rate_limited',
        `This key already holds ${held} MCP sessions on this instance; end one (DELETE /mcp) or let one go idle.`,
        { limit: env.MCP_SESSIONS_PER_KEY, scope: 'mcp_sessions' },
        { retryAfter: 60 },
      );
    }
    this.startSweep(env.MCP_SESSION_IDLE_MS);
    const session = new McpSession(randomUUID(), keyId);
    this.byId.set(session.id, session);
    session.onclose = () => void this.byId.delete(session.id);
    return session;
  }

  private startSweep(idleMs: number): void {
    if (this.sweep) return;
    this.sweep = setInterval(() => this.closeIdle(idleMs), Math.min(SWEEP_MS, idleMs));
    this.sweep.unref();
  }

  private closeIdle(idleMs: number): void {
    const idle = Date.now() - idleMs;
    for (const session of this.byId.values()) if (session.posting === 0 && session.lastSeen < idle) session.close();
  }

  /** The service is stopping: waits answer the decision as it stands, then every session closes. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.sweep) clearInterval(this.sweep);
    // Waits answer at once (the decision as it stands): their answers go out before the sessions
    // close, within the drain the launcher allows.
    for (const watch of this.waits) watch.cancel();
    const until = Date.now() + DRAIN_MS;
    while (this.calls.running > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    for (const session of [...this.byId.values()]) session.close();
    await this.answers.close();
    await this.pool?.close();
  }
}
