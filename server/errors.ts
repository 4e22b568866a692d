/**
 * The one error table: every error code the API can answer with, its HTTP status, and the
 * documentation served at GET /api/v1/errors?code=<code>. Domain code throws `AppError(code)`;
 * the transport maps it through this table and nothing else.
 */

export interface ErrorSpec {
  status: number;
  /** One line: when this happens. */
  meaning: string;
  /** What the caller should do about it. */
  action: string;
  /** Seconds a client should wait before retrying, when the error is transient. */
  retryAfter?: number;
}

export const errorTable = {
  invalid_json: {
    status: 400,
    meaning:
      'The body is not valid UTF-8 JSON, or is not a JSON object where one is required, or it repeats a member name in ' +
      'one object, or nests deeper than 64 levels.',
    action: 'Send a JSON object with Content-Type: application/json, each name once per object. An empty body counts as {}.',
  },
  validation_failed: {
    status: 400,
    meaning: 'A field breaks its rule (type, length, range, format, or a relation such as placement).',
    action: 'Fix the fields listed in details.issues ([{path, message}]) and send the request again.',
  },
  unknown_field: {
    status: 400,
    meaning: 'A closed body or query carries a field the operation does not define.',
    action: 'Remove the fields listed in details.fields. Fields are never silently ignored.',
  },
  invalid_cursor: {
    status: 400,
    meaning: 'A cursor or Last-Event-ID that this service did not issue for this workspace.',
    action: 'Pass meta.nextCursor (or an SSE id) back unchanged, or omit it to read from the start.',
  },
  invalid_idempotency_key: {
    status: 400,
    meaning: 'The Idempotency-Key header breaks ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$.',
    action: 'Use 1 to 200 characters: letters, digits and . _ : / - (not first). A UUID is a good key.',
  },
  unauthorized: {
    status: 401,
    meaning: 'No credential, or an API key that is unknown or revoked.',
    action: 'Send Authorization: Bearer <API key>. Keys are created with npm run key:create or in the app.',
  },
  forbidden: {
    status: 403,
    meaning: 'The credential is valid but not allowed to do this (for example a workspace_id of another workspace).',
    action: 'Use a credential of the workspace concerned, or a member with the needed role.',
  },
  human_session_required: {
    status: 403,
    meaning: 'An API key tried an action reserved to a signed-in human (approve, decline, choose an option).',
    action: 'Send the human to resolve_url; the ruling is made in the browser.',
  },
  not_found: {
    status: 404,
    meaning: 'No such route or resource in your workspace (resources of other workspaces are reported the same way).',
    action: 'Check the id and the workspace of your credential.',
  },
  idempotency_in_progress: {
    status: 409,
    meaning: 'A request with the same Idempotency-Key is still being processed.',
    action: 'Retry after a moment; you will then get the first request’s response.',
    retryAfter: 1,
  },
  invalid_state_transition: {
    status: 409,
    meaning: 'The action is not valid in the resource’s current state (details.status says which).',
    action: 'Read the resource and choose an action its state allows.',
  },
  lifecycle_action_failed: {
    status: 409,
    meaning: 'The lifecycle action cannot be applied to the node in its current state.',
    action: 'Read the node and its descendants; choose an action their states allow.',
  },
  conflict: {
    status: 409,
    meaning:
      'The change would break a rule of the current state: a workspace name already taken, a person already a member, ' +
      'or a workspace left without an owner.',
    action: 'Read the current state (the message says what stands in the way) and choose a change it allows.',
  },
  precondition_failed: {
    status: 412,
    meaning: 'If-Match names a version the resource has moved past: someone changed it since you read it.',
    action: 'Read the resource again (its ETag is its current version), reapply your change, and send it with the new If-Match.',
  },
  receipt_conflict: {
    status: 409,
    meaning: 'A different receipt document with this receipt_id was already imported into the workspace.',
    action: 'Export the stored one (GET /receipts/{id}); import a corrected receipt under a new receipt_id.',
  },
  decision_not_pending: {
    status: 409,
    meaning: 'The decision has already been ruled on, cancelled or expired.',
    action: 'Poll the decision to read its resolution.',
  },
  already_ruled: {
    status: 409,
    meaning:
      'You have already ruled on this decision, yourself or through a delegate: under its policy nobody counts twice towards its quorum.',
    action: 'Wait for the other approvers; the decision’s `approvals` say who has approved and who is still needed.',
  },
  passkey_required: {
    status: 403,
    meaning: 'The decision is approved only with the approver’s passkey: a WebAuthn assertion over the ruling’s statement.',
    action: 'Approve it on its page, with a passkey added at /settings/account.',
  },
  witness_not_named: {
    status: 403,
    meaning:
      'A cosignature by a witness this workspace’s owners have not named (or have removed): only named witnesses vouch for its ledger.',
    action:
      'An owner names the witness with POST /ledger/witnesses {"vkey": "<its verifier key>"} (details.vkey is the key sent); then send the cosignature again.',
  },
  grant_used: {
    status: 409,
    meaning: 'The grant has already been consumed: a grant permits its action once.',
    action: 'Do not run the action again. To run it again, raise a new decision.',
  },
  grant_not_yours: {
    status: 403,
    meaning:
      'The grant is not for this key: a grant is used only by the key that raised its decision (its token’s `azp`), or, for a decision a person raised, by a key of that person.',
    action: 'Hand the action to the agent whose key raised the decision, or raise a decision of your own for it. Nothing was used up.',
  },
  grant_mismatch: {
    status: 409,
    meaning: 'The grant is for another action: the action_digest presented is not the one approved. The grant stays usable.',
    action: 'Run the action the decision approved (GET /decisions/{id} `approved_action`), or raise a new decision for this one.',
  },
  grant_expired: {
    status: 409,
    meaning: 'The grant is past its expiry (`exp`, `expires_at`).',
    action: 'Raise a new decision; a longer grant_ttl_seconds (at most 86400) gives the next grant longer.',
  },
  approval_stale: {
    status: 409,
    meaning: 'The task the action targets is no longer at the version the decision was raised for: the approval is void.',
    action: 'Read the task again (details.current_version) and raise a new decision for it as it is.',
  },
  lease_expired: {
    status: 409,
    meaning:
      'The run’s lease lapsed: its agent stopped heartbeating for longer than lease_seconds. The service failed the run and its task is ready for another agent; nothing from this run is written any more.',
    action: 'Stop working on the task. Claim work again (POST /tasks/claim), and heartbeat at a third of lease_seconds while you work.',
  },
  quota_exceeded: {
    status: 403,
    meaning:
      'Storing this would take the workspace past its quota of stored artifact content (details: used_bytes, limit_bytes, size_bytes).',
    action:
      'Remove stored content the workspace no longer needs (DELETE /artifacts/{id}/content, or a shorter artifact_content_days), register large artifacts by uri, or ask the operator for a larger ARTIFACT_QUOTA_BYTES.',
  },
  payload_too_large: {
    status: 413,
    meaning: 'The body is larger than the route accepts (1 MiB for the API).',
    action: 'Send a smaller body.',
  },
  unsupported_media_type: {
    status: 415,
    meaning: 'The body is not application/json.',
    action: 'Send Content-Type: application/json.',
  },
  idempotency_conflict: {
    status: 422,
    meaning: 'The Idempotency-Key was already used with a different request (method, path or body).',
    action: 'Use a new key for a new request; resend the same body to get the original response.',
  },
  upstream_unavailable: {
    status: 422,
    meaning:
      'The MCP server named could not be listed: it did not answer, refused the request (its credential, say), or did not answer as an MCP server over Streamable HTTP. Nothing was written.',
    action:
      'Check the URL and the headers the server needs (the message says what went wrong), and that the server runs and is reachable from the service; then send the request again.',
  },
  rate_limited: {
    status: 429,
    meaning: 'Too many requests for this key or client address.',
    action: 'Wait Retry-After seconds (also in error.retryAfter) and retry.',
    retryAfter: 1,
  },
  internal_error: {
    status: 500,
    meaning: 'An unexpected error. The write may or may not have been applied.',
    action: 'Retry with the same Idempotency-Key (it replays a write that was applied); report error.requestId if it persists.',
  },
  service_unavailable: {
    status: 503,
    meaning: 'A store this operation needs is unavailable or too busy (it fails closed).',
    action: 'Wait Retry-After seconds and retry with the same Idempotency-Key.',
    retryAfter: 1,
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorTable;
export const errorCodes = Object.keys(errorTable) as ErrorCode[];

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(errorTable, value);
}

/** What an error knows only when it happens: a computed Retry-After, headers to send with it. */
export interface ErrorExtras {
  /** Seconds to wait, overriding the table's (a rate limit knows when its window ends). */
  retryAfter?: number;
  headers?: Record<string, string>;
}

/** The error domain code throws. Its message reaches the client, so it must never hold internals. */
export class AppError extends Error {
  override readonly name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details: Record<string, unknown> = {},
    readonly extras: ErrorExtras = {},
  ) {
    super(message ?? errorTable[code].meaning);
  }

  get status(): number {
    return errorTable[this.code].status;
  }

  /** Seconds a client should wait before retrying; 0 when retrying will not help. */
  get retryAfter(): number {
    const spec: ErrorSpec = errorTable[this.code];
    return this.extras.retryAfter ?? spec.retryAfter ?? 0;
  }
}

/** PostgreSQL conditions that mean "the store is unavailable or too busy right now": answered as 503. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown (backend terminated)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '57014', // query_canceled (statement_timeout)
  '55P03', // lock_not_available (lock_timeout)
  '53300', // too_many_connections
  '53400', // configuration_limit_exceeded
  '40001', // serialization_failure
  '40P01', // deadlock_detected
]);
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECTION_CLOSED',
  'CONNECT_TIMEOUT',
]);

/** True when `err` (or what it wraps) says the database cannot serve right now. */
export function isStoreUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08') || UNAVAILABLE_NODE_CODES.has(code)) return true;
    }
  }
  return false;
}

/** The SQLSTATE `err` (or what it wraps) carries, if any. */
export function sqlStateOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** True when `err` (or what it wraps) carries SQLSTATE `code`. */
export function hasSqlState(err: unknown, code: string): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === code) return true;
  }
  return false;
}

/** lock_timeout fired (SQLSTATE 55P03). */
export function isLockTimeout(err: unknown): boolean {
  return hasSqlState(err, '55P03');
}
