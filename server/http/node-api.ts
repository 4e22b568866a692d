/**
 * /api/v1 on node:http: the transport (server/api/rest.ts) given the node request and response
 * themselves. scripts/serve.mjs hands every /api/v1 request to `handleApiRequest`, which it loads
 * from server/ bundled on its own (server/http/serve-entry.ts), not from Next's build, and
 * everything else to Next.
 *
 * The body is read here once, straight from the socket, counted while read; the answer goes out in
 * one write (an event stream as it comes). When the transport answers before the body was read
 * (413, 401, 415 …), the answer goes out at once with `Connection: close`, and the unread rest is
 * drained, bounded, before the connection closes (see send).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRestHandler } from '@/server/api/rest';
import { describeError, log } from '@/server/log';
import { getRuntime } from '@/server/runtime';
import { BodyCutOff, discard, nodeHeaders, type Answer, type ApiRequest, type PushedBody } from './exchange';

/** At most this much of a body the answer did not need is read and dropped, for at most DRAIN_MS. */
const DRAIN_BYTES = 8 * 1024 * 1024;
const DRAIN_MS = 5_000;

/** Reads the body once, bounded while read (see ApiRequest.body). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Over the limit: stop here; the rest is drained (or the connection cut) after the answer.
        done();
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      done();
      reject(new BodyCutOff(err));
    };
    const onClose = () => {
      if (req.complete) return;
      done();
      reject(new BodyCutOff(new Error('the client closed the connection')));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * Reads and drops what is left of a body the answer did not need (bounded). Resolves true once the
 * body has ended, false when the client left or the rest was too long or too slow.
 */
function drainUnread(req: IncomingMessage): Promise<boolean> {
  return new Promise((resolve) => {
    let drained = 0;
    const settle = (ended: boolean) => {
      clearTimeout(cut);
      req.off('data', onData);
      resolve(ended);
    };
    const cut = setTimeout(() => settle(false), DRAIN_MS);
    const onData = (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > DRAIN_BYTES) settle(false);
    };
    // A client that resets while we drain is no error of ours.
    req.on('error', () => settle(false));
    req.once('close', () => settle(req.complete));
    req.once('end', () => settle(true));
    req.on('data', onData);
    req.resume();
  });
}

/** The transport's view of a node request (see ApiRequest). */
function apiRequestOf(req: IncomingMessage): ApiRequest {
  let read = false;
  return {
    method: req.method ?? 'GET',
    url: new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`),
    // req.headers, not rawHeaders: scripts/serve.mjs has appended the peer to X-Forwarded-For there.
    headers: nodeHeaders(req.headers),
    body(limit) {
      if (read) throw new Error('the request body is read once');
      read = true;
      return readBody(req, limit);
    },
  };
}

/** Writes an answer: one write for a whole body, chunk by chunk for a stream. */
export async function send(req: IncomingMessage, res: ServerResponse, answer: Answer): Promise<void> {
  const unread = !req.complete && !req.readableEnded;
  if (unread && !answer.stream) {
    // Answered before the body was all read (413, 401, 415 …): the answer goes out whole at once,
    // so a client that reads while it sends (curl) stops sending; then what the client still sends
    // is read and dropped (bounded) before the connection closes. Closing a socket with unread
    // bytes in it resets it, and a reset can take the answer with it (nginx's lingering close).
    answer.headers['Connection'] = 'close';
    const body = answer.status === 204 || answer.status === 304 ? '' : (answer.body ?? '');
    if (body !== '') answer.headers['Content-Length'] = String(Buffer.byteLength(body));
    res.writeHead(answer.status, answer.headers);
    if (body !== '') res.write(body);
    else res.flushHeaders();
    if (await drainUnread(req)) res.end();
    else req.socket.destroy();
    return;
  }
  if (unread) {
    answer.headers['Connection'] = 'close';
    if (!(await drainUnread(req))) {
      if (answer.stream) discard(answer.stream);
      return void req.socket.destroy();
    }
  }
  if (answer.stream) {
    res.writeHead(answer.status, answer.headers);
    res.flushHeaders();
    push(answer.stream, res);
    return;
  }
  const body = answer.body ?? '';
  // 204 and 304 carry no body; a HEAD answer says the length its GET would have (node sends no body).
  if (answer.status !== 204 && answer.status !== 304) answer.headers['Content-Length'] = String(Buffer.byteLength(body));
  res.writeHead(answer.status, answer.headers);
  res.end(answer.status === 204 || answer.status === 304 ? undefined : body);
}

/**
 * Starts a pushed answer (an event-stream lease) writing straight into the response; a client that
 * leaves cancels it. Nothing waits on it here: the lease's own loop is all an idle lease holds.
 */
function push(body: PushedBody, res: ServerResponse): void {
  const gone = () => body.cancel();
  // 'close' comes once; `once` would add a wrapper the lease keeps (scripts/serve.mjs).
  res.on('close', gone);
  // The client may have left while the lease was being opened ('close' came before the listener).
  if (res.destroyed) return discard(body);
  body.start({
    // res.write answers false past the socket's buffer (16 KiB beyond what the kernel holds).
    write: (chunk) => res.destroyed || res.write(chunk),
    drained: (then) => void res.once('drain', then),
    end() {
      res.off('close', gone);
      if (!res.destroyed) res.end();
    },
  });
}

/** A node:http handler over a transport (tests serve test databases through it). */
export function nodeApiHandler(handle: (request: ApiRequest) => Promise<Answer>) {
  return async function handleNode(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await send(req, res, await handle(apiRequestOf(req)));
    } catch (err) {
      // The transport answers every error itself; this is a failure to write (the client left).
      log('error', 'api request failed outside the transport', { error: describeError(err) });
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json', 'Content-Length': '0' });
      res.end();
    }
  };
}

/** Serves one /api/v1 request of the process's runtime; never throws. */
export const handleApiRequest = nodeApiHandler(createRestHandler({ runtime: getRuntime }));
