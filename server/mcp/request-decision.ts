/**
 * request_decision: raises the decision, then, with wait_seconds, waits for its ruling on the
 * workspace's feed (server/mcp/wait.ts, no query while idle), reporting progress and offering the
 * decision page by URL elicitation to a client that can open one. server/mcp/dispatch.ts hands it
 * the call; it answers the tool's result when the wait ends.
 *
 * Memory: ten thousand may wait at once on one instance (docs/performance.md). A waiting call holds
 * no async frame: once the decision is raised and read, its state is a DecisionWait's fields, held
 * by its watch (the feed, a timer) and the call's stream; nothing is allocated per wake-up beyond
 * the read it makes.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { admitWaiter } from '@/server/capacity';
import { AppError } from '@/server/errors';
import { hubOf } from '@/server/ledger/feed';
import { callTool, refusal, resultOf, type Caller, type ToolAnswer } from './call';
import type { McpContext } from './sessions';
import { resourceReaders, WAIT_SECONDS_MAX, type Tool } from './tools';
import type { CallAnswer, McpSession } from './transport';
import { DecisionWatch, type WaitSignal } from './wait';

/** How often a waiting request_decision reports progress when nothing happens (keeps proxies and client timeouts alive). */
const PROGRESS_EVERY_MS = 10_000;
/** How early a timer's step may come and still write the keepalive it was set for. */
const KEEPALIVE_SLACK_MS = 100;

/** What a wait ended with, beside the decision. */
export type WaitEnd = 'not_waited' | 'ruled' | 'wait_elapsed' | 'cancelled' | 'service_stopping';

/**
 * What the call answers once the wait is over: `answer` is the decision as GET /decisions/{id}
 * then gives it. request_decision answers it as it is; the gateway runs the approved call.
 */
export type FinishWait = (answer: ToolAnswer, ended: WaitEnd, waitedMs: number) => CallToolResult | Promise<CallToolResult>;

const answerDecision: FinishWait = (answer, ended, waitedMs) => resultOf(answer, { wait: { ended, waited_ms: waitedMs } });

/** What raising the decision came to: the call's answer when there is nothing to wait for, else the decision to wait on. */
export type Raised = { result: CallToolResult } | { id: string; title: string | undefined };

/** The request a wait answers: its id, the client's progress token, and its event stream. */
export interface WaitCall {
  id: RequestId;
  progressToken: string | number | undefined;
  answer: CallAnswer;
}

/**
 * request_decision: raises the decision (POST /decisions), then, with wait_seconds, waits on the
 * workspace's feed until the decision's ledger moves to a ruling or the wait ends, reporting
 * progress and offering the decision page's URL to a client that can open one. It answers the
 * decision as GET /decisions/{id} then gives it, with `wait: {ended, waited_ms}`.
 *
 * While it waits it holds a DecisionWait (below), its watch (its place on the feed), a timer and
 * the call's stream: the decision's answer is read again when the wait ends, not kept (a decision
 * is kilobytes, and ten thousand may wait at once).
 */
export async function requestDecision(
  ctx: McpContext,
  session: McpSession,
  tool: Tool,
  args: Record<string, unknown>,
  caller: Caller,
  call: WaitCall,
): Promise<CallToolResult> {
  const appUrl = ctx.runtime.env.APP_URL;
  const waitSeconds = args.wait_seconds ?? 0;
  if (typeof waitSeconds !== 'number' || !Number.isInteger(waitSeconds) || waitSeconds < 0 || waitSeconds > WAIT_SECONDS_MAX) {
    const message = `An integer from 0 to ${WAIT_SECONDS_MAX}.`;
    return resultOf(
      refusal(new AppError('validation_failed', `wait_seconds: ${message}`, { issues: [{ path: 'wait_seconds', message }] }), appUrl),
    );
  }
  return waitForRuling(ctx, session, caller, call, waitSeconds, () => raise(ctx, tool, args, caller, waitSeconds), answerDecision);
}

/**
 * Raises a decision (`raise`) and waits up to `waitSeconds` for its ruling, as request_decision
 * does (admitted as a lease of the key, progress, the page offered, a keepalive), then answers what
 * `finish` makes of the decision as it then stands.
 */
export async function waitForRuling(
  ctx: McpContext,
  session: McpSession,
  caller: Caller,
  call: WaitCall,
  waitSeconds: number,
  raiseIt: () => Promise<Raised>,
  finish: FinishWait,
): Promise<CallToolResult> {
  const appUrl = ctx.runtime.env.APP_URL;
  const key = caller.presented.key!;
  const started = Date.now();
  const deadline = started + waitSeconds * 1000;
  // A wait holds a connection like an event-stream lease, and counts among the key's leases: admitted
  // before the decision is raised, so a refused wait raises nothing.
  const hub = hubOf(ctx.runtime);
  if (waitSeconds > 0) {
    try {
      admitWaiter(ctx.runtime.env.WAITERS_HEAP_PERCENT);
    } catch (err) {
      if (err instanceof AppError) return resultOf(refusal(err, appUrl));
      throw err;
    }
  }
  const place = waitSeconds > 0 ? hub.admit(key.keyId, deadline, ctx.runtime.env.SSE_LEASES_PER_KEY) : { release() {} };
  if ('retryAfterMs' in place) {
    const retryAfter = Math.max(1, Math.ceil(place.retryAfterMs / 1000));
    const limit = ctx.runtime.env.SSE_LEASES_PER_KEY;
    return resultOf(
      refusal(
        new AppError(
          'rate_limited',
          `This key already holds ${limit} open waits and event-stream leases on this instance; wait for one to end or pass wait_seconds 0.`,
          { limit, scope: 'event_stream_leases' },
          { retryAfter },
        ),
        appUrl,
      ),
    );
  }
  // The client that hangs up, cancels the call (notifications/cancelled) or ends the session ends
  // the wait, as stopping does; heard from the start, also while the decision is being raised.
  let watch: DecisionWatch | null = null;
  let cancelled = false;
  const cancel = () => {
    cancelled = true;
    watch?.cancel();
  };
  if (waitSeconds > 0) {
    (session.waits ??= new Map()).set(call.id, call.answer);
    call.answer.waiting(cancel);
  }
  const release = () => {
    if (watch) {
      watch.stop();
      ctx.waits.delete(watch);
    }
    session.waits?.delete(call.id);
    place.release();
  };
  let waiting = false;
  try {
    const raised = await raiseIt();
    if ('result' in raised) return raised.result;
    const { id, title } = raised;

    // Joined before the decision is read again: a ruling that commits after this read reaches the watch.
    watch = new DecisionWatch(hub, key.keyId, key.workspaceId, id);
    ctx.waits.add(watch);
    if (cancelled || ctx.stopping()) watch.cancel();
    await watch.start();
    const wait = new DecisionWait(ctx, session, call, caller, id, watch, { started, deadline, waitSeconds }, release, finish);
    const seen = await wait.glance();
    wait.offered = offerPage(session, call, pageOf(ctx, id), title);
    // Handed on, not awaited: while the wait lasts, its state is the DecisionWait's fields, and
    // this frame is gone. It releases what it holds when it settles.
    waiting = true;
    return wait.run(seen);
  } finally {
    if (!waiting) release();
  }
}

/**
 * A request_decision from the decision's first read to its answer: it reports progress every
 * PROGRESS_EVERY_MS, and reads the decision again each time its ledger moves, until it is ruled or
 * the wait ends. While it waits it is held by its watch (the feed, a timer) and the call's stream,
 * with no async frame: what it needs is these fields.
 */
class DecisionWait {
  /** The decision page offered to the client (URL-mode elicitation), to withdraw or complete at the end. */
  offered: { elicitationId: string; requestId: string } | null = null;
  private seen: Glance = { final: null, approvals: 0, required: undefined };
  /** When the last keepalive was written (performance.now()); none yet. */
  private keptAliveAt = -Infinity;
  /** Seconds waited in the last progress notification: strictly increasing (the protocol asks it). */
  private lastProgress = -1;
  private resolve: (result: CallToolResult) => void = () => undefined;
  private reject: (err: unknown) => void = () => undefined;

  constructor(
    private readonly ctx: McpContext,
    private readonly session: McpSession,
    private readonly call: WaitCall,
    private readonly caller: Caller,
    private readonly id: string,
    private readonly watch: DecisionWatch,
    private readonly span: { started: number; deadline: number; waitSeconds: number },
    private readonly release: () => void,
    private readonly finish: FinishWait,
  ) {}

  /** Reads the decision as GET /decisions/{id} answers it. */
  read(): Promise<ToolAnswer> {
    return callTool(this.ctx.handle, resourceReaders().decision, { id: this.id }, this.caller, this.ctx.runtime.env.APP_URL);
  }

  /** A read of the decision, kept whole only when it ends the wait (ruled, or an error). */
  async glance(): Promise<Glance> {
    const answer = await this.read();
    const decision = (answer.body as { decision?: { status?: string; approvals?: unknown[]; policy?: { approvals_required?: number } } })
      .decision;
    if (answer.status >= 400 || decision?.status !== 'pending') return { final: answer, approvals: 0, required: undefined };
    return { final: null, approvals: decision.approvals?.length ?? 0, required: decision.policy?.approvals_required };
  }

  /** Waits from `seen`, the decision's first read; settles with the tool's result. */
  run(seen: Glance): Promise<CallToolResult> {
    return new Promise<CallToolResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.step(seen);
    });
  }

  private step(seen: Glance): void {
    this.seen = seen;
    if (seen.final) {
      if (seen.final.status >= 400) return this.settle(resultOf(seen.final));
      return this.end('ruled');
    }
    const left = this.span.deadline - Date.now();
    if (left <= 0) return this.end('wait_elapsed');
    this.progress();
    // A client that asked for no progress still hears from a wait this often: proxies close quiet
    // connections. Timed from the last one, not written at every step: a step also follows each
    // move of the ledger and the wait's own end, and a timer may fire a little early.
    const now = performance.now();
    if (now - this.keptAliveAt >= PROGRESS_EVERY_MS - KEEPALIVE_SLACK_MS) {
      this.keptAliveAt = now;
      this.call.answer.keepAlive();
    }
    this.watch.next(Math.min(left, PROGRESS_EVERY_MS), this.woken);
  }

  private readonly woken = (why: WaitSignal): void => {
    try {
      this.wake(why);
    } catch (err) {
      this.fail(err);
    }
  };

  private wake(why: WaitSignal): void {
    if (why === 'moved') this.glance().then((seen) => this.step(seen), this.fail);
    else if (why === 'timeout') this.step(this.seen);
    else if (why === 'cancelled') this.end(this.ctx.stopping() ? 'service_stopping' : 'cancelled');
    else if (why === 'access_ended') {
      this.settle(resultOf(refusal(new AppError('unauthorized', 'The API key was revoked while waiting.'), this.ctx.runtime.env.APP_URL)));
    }
    // The feed could not read: the decision as it stands, from a read of its own.
    else this.end('wait_elapsed');
  }

  /** Sends a progress notification when the client asked for them (a progressToken). */
  private progress(): void {
    const token = this.call.progressToken;
    if (token === undefined) return;
    const { approvals, required } = this.seen;
    const count = required && required > 1 ? ` (${approvals} of ${required} approvals)` : '';
    this.lastProgress = Math.max(this.lastProgress + 0.001, (Date.now() - this.span.started) / 1000);
    this.call.answer.send({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: {
        progressToken: token,
        progress: this.lastProgress,
        total: this.span.waitSeconds,
        message: `Waiting for a human ruling${count}: ${pageOf(this.ctx, this.id)}`,
      },
    });
  }

  /** The wait is over: answers the decision as it stands. */
  private end(ended: WaitEnd): void {
    const final = this.seen.final;
    (final ? Promise.resolve(final) : this.read())
      .then((answer) => {
        const offered = this.offered;
        if (offered) {
          // The page offered is done with: ruled, the client is told the interaction completed;
          // otherwise the offer is withdrawn, as a request the server no longer waits on.
          this.call.answer.send(
            ended === 'ruled'
              ? { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: offered.elicitationId } }
              : {
                  jsonrpc: '2.0',
                  method: 'notifications/cancelled',
                  params: { requestId: offered.requestId, reason: `The wait ended (${ended}).` },
                },
          );
        }
        return this.finish(answer, ended, Date.now() - this.span.started);
      })
      .then((result) => this.settle(result), this.fail);
  }

  private readonly fail = (err: unknown): void => {
    this.release();
    this.reject(err);
  };

  private settle(result: CallToolResult): void {
    this.release();
    this.resolve(result);
  }
}

/** The decision page a wait offers and reports. */
function pageOf(ctx: McpContext, id: string): string {
  return new URL(`/decisions/${id}`, ctx.runtime.env.APP_URL).toString();
}

/**
 * Raises the decision (POST /decisions): the tool's answer when there is nothing to wait for (an
 * error, wait_seconds 0, a decision already ruled: an idempotent replay), else the decision's id and title.
 */
async function raise(ctx: McpContext, tool: Tool, args: Record<string, unknown>, caller: Caller, waitSeconds: number): Promise<Raised> {
  const raised = await callTool(ctx.handle, tool, args, caller, ctx.runtime.env.APP_URL);
  const decision = (raised.body as { decision?: { id: string; status: string; title?: string } }).decision;
  if (raised.status >= 400 || !decision) return { result: resultOf(raised) };
  if (waitSeconds === 0 || decision.status !== 'pending')
    return { result: resultOf(raised, { wait: { ended: 'not_waited', waited_ms: 0 } }) };
  return { id: decision.id, title: decision.title };
}

/** A read of the decision, kept whole only when it ends the wait (ruled, or an error). */
interface Glance {
  final: ToolAnswer | null;
  approvals: number;
  required: number | undefined;
}

/**
 * Offers the decision page to a client that can open a URL (URL-mode elicitation, as it declared
 * at initialize): the human sees a link to the page where they rule. Its answer (opened or not)
 * changes nothing here, so nothing waits for it; returns the offer's ids, or null when the client
 * cannot take one.
 */
function offerPage(
  session: McpSession,
  call: WaitCall,
  page: string,
  title: string | undefined,
): { elicitationId: string; requestId: string } | null {
  if (!session.urlElicitation) return null;
  const elicitationId = randomUUID();
  const requestId = session.nextRequestId();
  call.answer.send({
    jsonrpc: '2.0',
    id: requestId,
    method: 'elicitation/create',
    params: {
      mode: 'url',
      elicitationId,
      url: page,
      message: `An agent is waiting for your ruling${title ? ` on “${title}”` : ''}. Open the decision page to approve or decline.`,
    },
  });
  return { elicitationId, requestId };
}
