/**
 * The context every procedure runs in, built in one place for each way a request comes in: REST
 * (/api/v1, server/api/rest.ts), the interface's own tRPC endpoint (/api/trpc) and server
 * components' callers (server/api/internal.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Runtime } from '@/server/runtime';
import type { HeaderReader } from '@/server/http/exchange';
import type { PresentedKey } from './api-key-auth';

export interface ApiContext {
  runtime: Runtime;
  /**
   * `rest`: /api/v1 (agents and humans; body limits, envelope, idempotency). `internal`: /api/trpc,
   * the web interface's own endpoint, for session cookies only.
   */
  transport: 'rest' | 'internal';
  requestId: string;
  method: string;
  /** The request path (e.g. /api/v1/work), without query. */
  path: string;
  headers: HeaderReader;
  /** The parsed JSON body (an object) of a POST, exactly as sent; undefined for GET. */
  body: unknown;
  /**
   * The bearer key as the REST transport resolved and counted it (null: none presented);
   * undefined where the transport did not (the internal endpoint refuses keys).
   */
  presentedKey?: PresentedKey | null;
  /**
   * Status and headers the procedure wants on its success response, and the JSON text of its body
   * when runMutation has made it already (the stored idempotent response: server/api/mutation.ts).
   */
  res: {
    status: number | undefined;
    headers: Record<string, string>;
    serialised?: { body: unknown; text: string };
    /** Bytes to answer as they are, with their own Content-Type (an artifact's content), instead of the procedure's JSON. */
    raw?: { body: Buffer; contentType: string };
  };
  /** Who called, once a procedure has authenticated them (for the access log: ids, never a credential). */
  caller?: { keyId: string; workspaceId: string } | { userId: string };
}

export interface ContextInit {
  transport: ApiContext['transport'];
  method: string;
  url: URL;
  headers: HeaderReader;
  requestId?: string;
  body?: unknown;
  presentedKey?: PresentedKey | null;
}

export function createApiContext(runtime: Runtime, init: ContextInit): ApiContext {
  return {
    runtime,
    transport: init.transport,
    requestId: init.requestId ?? randomUUID(),
    method: init.method,
    path: init.url.pathname,
    headers: init.headers,
    body: init.body,
    presentedKey: init.presentedKey,
    res: { status: undefined, headers: {} },
  };
}
