/**
 * Request bodies on their way to Next.js: /api/trpc, /api/auth, every route handler and page.
 *
 * Next reads a body whole and with no limit of its own (a 200 MiB POST to /api/trpc ran the
 * process out of heap; 50 MiB was read in full before its 400). So scripts/serve.mjs hands Next no
 * request whose body has not been read here first, counted while read, the same way as /api/v1
 * (server/http/node-api.ts): a declared or streamed body over the limit is answered 413 in the
 * contract's envelope before the rest is read, and its connection closed; a body within it is
 * given to Next from memory. Requests without a body go to Next untouched.
 *
 * This guards the production server (scripts/serve.mjs); `next dev` serves its own requests.
 */
import { randomUUID } from 'node:crypto';
import { IncomingMessage, type ServerResponse } from 'node:http';
import { errorAnswer } from '@/server/api/rest';
import { AppError } from '@/server/errors';
import { getRuntime } from '@/server/runtime';
import { readBody, send } from './node-api';

/** No page, form or tRPC call of the human interface sends more; none needs a larger limit. */
const NEXT_BODY_LIMIT_BYTES = 1024 * 1024;

/** True when the request carries a body: a length above zero, or one sent in chunks. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * A request like `req` whose body is `body`, already read. Its socket is the client's (Next asks it
 * whether the connection is encrypted, and for the peer's address).
 */
function replay(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method;
  copy.url = req.url;
  copy.headers = req.headers;
  copy.rawHeaders = req.rawHeaders;
  copy.httpVersion = req.httpVersion;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.complete = true;
  copy.push(body);
  copy.push(null);
  return copy;
}

/**
 * The request to hand Next, its body read and bounded; or null when it has been answered here
 * (413, or a client that left mid-body).
 */
export async function boundedForNext(req: IncomingMessage, res: ServerResponse): Promise<IncomingMessage | null> {
  if (!hasBody(req)) return req;
  let body: Buffer | null;
  try {
    body = await readBody(req, NEXT_BODY_LIMIT_BYTES);
  } catch {
    // The client stopped sending mid-body: nobody is left to answer.
    req.socket.destroy();
    return null;
  }
  if (body) return replay(req, body);
  const requestId = randomUUID();
  const error = new AppError('payload_too_large', `The body is larger than ${NEXT_BODY_LIMIT_BYTES} bytes.`, {
    limitBytes: NEXT_BODY_LIMIT_BYTES,
  });
  const answer = errorAnswer(requestId, error, (await getRuntime()).env.APP_URL);
  Object.assign(answer.headers, { 'X-Request-Id': requestId, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' });
  await send(req, res, answer);
  return null;
}
