/**
 * POST /api/v1/agent-work-receipts/validate: the public validation endpoint, and the import beside
 * it (operations the REST transport serves itself: served-operations.ts). No credential, stores
 * nothing. It reads the body itself (outside the JSON adapter) so the byte limit is counted while
 * reading (a lying or absent Content-Length, or a chunked body, cannot get past it) and so
 * duplicate keys are still visible to the strict reader. Errors use the validator's own shape:
 * { ok: false, valid: false, error: { code, message, issues } }.
 */
import { EMPTY_CONTEXT_MANIFEST_DIGEST, type Actor } from '@/server/domain/actor';
import { importReceipt } from '@/server/domain/receipts/import';
import { checkReceipt, LIMITS, readReceiptText, validateReceiptText, type Issue } from '@/server/domain/receipts/validate';
import { AppError } from '@/server/errors';
import { describeError, log } from '@/server/log';
import { utf8 } from '@/server/strict-json';
import { clientAddress, hit, isExceeded, rateLimitedError, rateLimitHeaders, type RateLimitUsage } from '@/server/rate-limits';
import { requireKey, type PresentedKey } from './api-key-auth';
import type { Answer, ApiRequest } from '@/server/http/exchange';
import type { Runtime } from '@/server/runtime';
import { countRefusal } from '@/server/metrics';

function json(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return { status, headers: { ...headers, 'Content-Type': 'application/json; charset=utf-8' }, body: JSON.stringify(body) };
}

function validatorError(status: number, code: string, message: string, issues: Issue[] = []): Answer {
  return json(status, { ok: false, valid: false, error: { code, message, issues } });
}

export type ValidatorAllowance = { ok: true; headers: Record<string, string> } | { ok: false; error: AppError };

/**
 * Counts a public-validator request against its client address (RATE_LIMIT_VALIDATOR_PER_MIN).
 * Fails closed: when the counter cannot be written, for any reason, the answer is 503, never an
 * unlimited pass.
 */
export async function allowValidatorRequest(request: ApiRequest, runtimeOf: () => Promise<Runtime>): Promise<ValidatorAllowance> {
  const now = new Date();
  let usage: RateLimitUsage;
  try {
    const runtime = await runtimeOf();
    const address = clientAddress(request.headers, runtime.env.TRUSTED_PROXY_HOPS);
    usage = await hit(runtime.db, `validator:${address}`, runtime.env.RATE_LIMIT_VALIDATOR_PER_MIN, now);
  } catch (err) {
    log('warn', 'validator rate limiter unavailable', { error: describeError(err) });
    return {
      ok: false,
      error: new AppError('service_unavailable', 'The rate limiter is unavailable, so the validator is closed. Retry shortly.'),
    };
  }
  if (isExceeded(usage)) {
    countRefusal('validator_rate_limit');
    return { ok: false, error: rateLimitedError(usage, now, 'from this client address') };
  }
  return { ok: true, headers: rateLimitHeaders(usage) };
}

/** An AppError (429, 503) in the validator's own shape, with its Retry-After. */
export function validatorErrorFrom(error: AppError): Answer {
  return json(
    error.status,
    { ok: false, valid: false, error: { code: error.code, message: error.message, issues: [], retryAfter: error.retryAfter } },
    { ...error.extras.headers, 'Retry-After': String(error.retryAfter) },
  );
}

/** POST …/validate once the request is allowed (the transport adds the rate-limit state to the answer). */
export async function serveReceiptValidation(request: ApiRequest): Promise<Answer> {
  const limit = LIMITS.max_bytes;
  const tooLarge = () => validatorError(413, 'input.too_large', `The document is larger than ${limit} bytes.`);
  const bytes = await request.body(limit);
  if (!bytes) return tooLarge();
  const text = utf8(bytes);
  if (text === null) return validatorError(400, 'input.invalid_json', 'The document is not valid UTF-8.');
  const outcome = validateReceiptText(text);
  if (outcome.ok) return json(200, { ok: true, valid: outcome.valid, issues: outcome.issues });
  return validatorError(outcome.code === 'input.structure_limit' ? 422 : 400, outcome.code, outcome.message, outcome.issues);
}

/**
 * POST /api/v1/agent-work-receipts/import (API key, the key's workspace): the same reading and
 * checks as the validator, then the document is stored with a `receipt.imported` event. Errors use
 * the API's envelope: 413 payload_too_large, 400 invalid_json (bad JSON, duplicate or __proto__
 * keys), 400 validation_failed (limits or schema, issues as JSON pointers), 409 receipt_conflict.
 */
export async function serveReceiptImport(
  request: ApiRequest,
  requestId: string,
  runtime: Runtime,
  presented: PresentedKey | null,
): Promise<Answer> {
  const key = requireKey(presented);

  const limit = LIMITS.max_bytes;
  const tooLarge = () => new AppError('payload_too_large', `A receipt document is at most ${limit} bytes.`, { limitBytes: limit });
  const bytes = await request.body(limit);
  if (!bytes) throw tooLarge();
  const text = utf8(bytes);
  if (text === null) throw new AppError('invalid_json', 'The body is not valid UTF-8.');
  // Read once with the validator's reader; its refusals in the API's envelope.
  const read = readReceiptText(text);
  if (!read.ok) {
    const p = read.problem;
    if (p.kind === 'syntax') throw new AppError('invalid_json', `The body is not valid JSON: ${p.message} at byte ${p.offset}.`);
    if (p.kind === 'duplicate_key' || p.kind === 'forbidden_key')
      throw new AppError('invalid_json', `The body is refused: ${p.message} at ${p.path}.`);
    // Issues of a receipt document are JSON pointers, as the validator gives them.
    const message = p.kind === 'unstorable' ? `${p.path}: ${p.message}.` : `The document is ${p.message}.`;
    throw new AppError('validation_failed', message, { issues: [{ path: p.path, message: p.message }] });
  }
  const checked = checkReceipt(read.value);
  if (!checked.valid) {
    throw new AppError('validation_failed', 'The document is not a valid agent-work-receipt/v0.1.', {
      issues: checked.issues.map((i) => ({ path: i.path, message: i.message })),
    });
  }
  const actor: Actor = {
    type: 'api_key',
    id: key.keyId,
    ownerId: key.ownerUserId,
    workspaceId: key.workspaceId,
    trace: { requestId, correlationId: requestId, idempotencyKey: null, contextManifestDigest: EMPTY_CONTEXT_MANIFEST_DIGEST },
  };
  const outcome = await runtime.db.transaction((tx) => importReceipt(tx, actor, read.value as Record<string, unknown>));
  return json(outcome.duplicate ? 200 : 201, {
    data: outcome,
    meta: { apiVersion: '1', workspaceId: key.workspaceId, duplicate: outcome.duplicate },
  });
}
