/**
 * Operations the REST transport answers itself instead of through a procedure's input and output,
 * because each reads its own body or writes a long answer. They are registered here, and the
 * operations table (operations.ts) finds them by method and path as it finds every other, so the
 * transport (rest.ts) names no path:
 *
 * - POST /agent-work-receipts/validate: public and limited per client address like the validator's
 *   GETs; it reads its own body (the byte limit counted while reading, duplicate keys visible to
 *   the strict reader) and answers, refusals of the limit included, in the validator's own shape.
 * - POST /agent-work-receipts/import: the validator's reading and checks, then stored; the API's envelope.
 * - GET /events/stream, beside the events.list procedure that defines it: format=sse is a lease
 *   (event-stream.ts), a plainly valid JSON page is served from ledger text (event-page.ts), and
 *   anything else goes on to the procedure.
 *
 * The OpenAPI document describes the first two by hand (openapi.ts) and the third from its procedure.
 */
import type { AnyProcedure } from '@trpc/server';
import type { AppError } from '@/server/errors';
import type { Answer, ApiRequest } from '@/server/http/exchange';
import type { Runtime } from '@/server/runtime';
import type { PresentedKey } from './api-key-auth';
import { serveEventPage } from './event-page';
import { serveEventStream } from './event-stream';
import { queryOnBodyOperation } from './query-input';
import { serveReceiptImport, serveReceiptValidation, validatorErrorFrom } from './receipt-validator';
import { listProcedure } from './routers/events/list';

/** What the transport knows of a request when it hands it on: its runtime, its key (resolved and counted) and its id. */
interface ServeCall {
  runtime: Runtime;
  presented: PresentedKey | null;
  requestId: string;
}

/** An operation served by the transport alone (no procedure defines it). */
export interface ServedOperation {
  method: 'POST';
  /** The path template, as documented. */
  path: `/${string}`;
  /** No credential. */
  isPublic: boolean;
  /** See Meta.limitedPerAddress (trpc.ts). */
  limitedPerAddress: boolean;
  /** How it answers a refusal of the per-address limit, when not in the API's envelope. */
  refusal: ((error: AppError) => Answer) | null;
  serve(request: ApiRequest, call: ServeCall): Promise<Answer>;
}

export const servedOperations: readonly ServedOperation[] = [
  {
    method: 'POST',
    path: '/agent-work-receipts/validate',
    isPublic: true,
    limitedPerAddress: true,
    refusal: validatorErrorFrom,
    serve: (request) => serveReceiptValidation(request),
  },
  {
    method: 'POST',
    path: '/agent-work-receipts/import',
    isPublic: false,
    limitedPerAddress: false,
    refusal: null,
    serve(request, call) {
      // It reads its own body, so the transport's rule (operations with a body take no query) is applied here.
      if (request.url.search.length > 1) throw queryOnBodyOperation(request.url);
      return serveReceiptImport(request, call.requestId, call.runtime, call.presented);
    },
  },
];

/** Answers some requests of a procedure's operation itself; null hands the request on to the procedure. */
export type ServeBeside = (request: ApiRequest, call: ServeCall) => Promise<Answer | null>;

/** The procedures whose operation the transport answers in part, and how. */
export const servedBeside: ReadonlyMap<AnyProcedure, ServeBeside> = new Map<AnyProcedure, ServeBeside>([
  [
    listProcedure as AnyProcedure,
    (request, call) => {
      // HEAD goes to the procedure.
      if (request.method !== 'GET') return Promise.resolve(null);
      if (request.url.searchParams.get('format') === 'sse') return serveEventStream(request, call.runtime, call.presented);
      return serveEventPage(request, call.runtime, call.presented);
    },
  ],
]);
