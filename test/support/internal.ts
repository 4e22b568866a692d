/**
 * Calls to the web interface's own endpoint (/api/trpc) as a browser makes them: a session cookie,
 * the page's Origin on writes, and the client address the service's HTTP server would append.
 */
import { createInternalTrpcHandler } from '@/server/api/internal';
import type { Runtime } from '@/server/runtime';
import { noteRequestBody } from './log-capture';

export interface Caller {
  /** A next-auth session cookie value. */
  session?: string;
  /** An API key (refused there: the endpoint is for sessions). */
  key?: string;
  /** The Origin of a write (default the app's own); null sends none. */
  origin?: string | null;
  /** The client address (X-Forwarded-For as scripts/serve.mjs writes it). */
  address?: string;
}

export interface InternalReply {
  status: number;
  body: any;
  /** The contract's code of an error (error.data.appCode), if any. */
  code: string | undefined;
  /** The procedure's result on success. */
  data: any;
}

export function internalClient(runtime: Runtime) {
  const handle = createInternalTrpcHandler(async () => runtime);
  const headersOf = (who: Caller, write: boolean) => {
    const headers = new Headers();
    if (write) headers.set('content-type', 'application/json');
    if (who.session) headers.set('cookie', `next-auth.session-token=${who.session}`);
    if (who.key) headers.set('authorization', `Bearer ${who.key}`);
    if (write && who.origin !== null) headers.set('origin', who.origin ?? 'http://127.0.0.1:3000');
    headers.set('x-forwarded-for', who.address ?? '127.0.0.1');
    return headers;
  };
  const reply = async (res: Response): Promise<InternalReply> => {
    const body = (await res.json()) as any;
    return { status: res.status, body, code: body?.error?.data?.appCode, data: body?.result?.data };
  };
  return {
    async mutate(path: string, input: unknown, who: Caller = {}): Promise<InternalReply> {
      noteRequestBody(input);
      const url = `http://127.0.0.1:3000/api/trpc/${path}`;
      return reply(await handle(new Request(url, { method: 'POST', headers: headersOf(who, true), body: JSON.stringify(input) })));
    },
    async query(path: string, input: unknown, who: Caller = {}): Promise<InternalReply> {
      noteRequestBody(input);
      const url = `http://127.0.0.1:3000/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`;
      return reply(await handle(new Request(url, { headers: headersOf(who, false) })));
    },
  };
}
