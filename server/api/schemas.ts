/**
 * Zod building blocks shared by every procedure: strict text and numbers for JSON bodies, ids,
 * timestamps, the response envelope and the ledger event. The OpenAPI document is generated
 * from these, so the rules written here are the rules documented.
 */
import { z } from 'zod';
import { canonicalJson } from '@/server/ledger/canonical';

// A missing required field says so, instead of "expected string, received undefined".
z.config({
  customError: (issue) => (issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : undefined),
});

/** A JSON number (never a string), finite, with optional bounds. */
export function jsonNumber(opts: { min?: number; max?: number; int?: boolean } = {}) {
  let s = opts.int ? z.int() : z.number();
  if (opts.min !== undefined) s = s.min(opts.min);
  if (opts.max !== undefined) s = s.max(opts.max);
  return s;
}

/**
 * An integer query parameter: plain decimal digits, no sign, point, exponent, spaces or leading
 * zero. z.coerce.number() read `0x10`, `1e3`, `1.0`, `" 1"`, `+1` and `01` as numbers, so one value
 * had many spellings (and the probe's `0x10` passed as 16). A number (the web interface's tRPC
 * calls, server components) is taken as it is. Documented as the integer it is.
 */
export function queryInteger(opts: { min: number; max: number }, documentedDefault?: number) {
  // A union, not z.preprocess: a preprocess step takes undefined too, which made every such
  // parameter optional in the published document, required or not.
  return z
    .union([z.number(), z.string()])
    .transform((value, ctx) => {
      if (typeof value !== 'string') return value;
      if (PLAIN_DECIMAL.test(value)) return Number(value);
      ctx.addIssue({
        code: 'custom',
        input: value,
        message: 'must be an integer in plain decimal digits (no sign, point, exponent, space or leading zero)',
      });
      return z.NEVER;
    })
    .pipe(z.int().min(opts.min).max(opts.max))
    .meta({
      // Replaced, not merged: the union's anyOf (number or string) is how it is read, not what it takes.
      override: ({ jsonSchema }) => {
        delete jsonSchema.anyOf;
        Object.assign(jsonSchema, {
          type: 'integer',
          minimum: opts.min,
          maximum: opts.max,
          ...(documentedDefault === undefined ? {} : { default: documentedDefault }),
        });
      },
    });
}

/** queryInteger defaulted: zod leaves a pipe's default out of the input's schema, so it is documented here. */
export const queryIntegerOr = (def: number, opts: { min: number; max: number }) => queryInteger(opts, def).default(def);

/** A list's `limit`: 1 to 100, default 50 (docs/contract.md §8). */
export const pageLimit = () => queryIntegerOr(50, { min: 1, max: 100 }).meta({ description: '1 to 100, default 50.' });

const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)$/;

/** A JSON boolean (never a string: the REST transport coerces only query parameters' declared types). */
export const jsonBoolean = () => z.boolean();

/**
 * A JSON object whose members are the client's own (a checkpoint's `state`), handed on as it came.
 * z.record would rebuild it by assignment and so drop a member named `__proto__` (assigning it
 * would replace the copy's prototype), while the same name one level down passed through as data:
 * the stored state, the response and the idempotency fingerprint (taken from the body as sent)
 * then disagreed. Checked here, never rebuilt: every member is kept as data at every level, and
 * JSON.parse made it, so it has no prototype tricks of its own. Documented as the record it is.
 */
export function jsonObject(opts: { maxBytes?: number } = {}) {
  return (
    z
      .custom<Record<string, unknown>>((v) => v !== null && typeof v === 'object' && !Array.isArray(v), {
        message: 'must be a JSON object',
      })
      // Before any check: zod-openapi reads the override from the schema the checks are added to.
      .meta({ override: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} } })
      .check((c) => {
        // /api/v1 refuses these as it reads a body (server/strict-json.ts); the web interface's
        // /api/trpc reads with JSON.parse, so they are refused here: recursive code further on
        // (JSON.stringify, the ledger's canonical form) overflows on deep values, and PostgreSQL
        // refuses U+0000 and lone surrogates, and JSON cannot write back a number beyond a double.
        const problem = jsonObjectProblem(c.value, JSON_OBJECT_MAX_DEPTH);
        if (problem) c.issues.push({ code: 'custom', input: c.value, path: problem.path, message: problem.message });
        // Measured as the bytes that are hashed (its RFC 8785 text), once it is known to have one.
        else if (opts.maxBytes !== undefined && Buffer.byteLength(canonicalJson(c.value)) > opts.maxBytes) {
          c.issues.push({ code: 'custom', input: c.value, message: `must be at most ${opts.maxBytes} bytes as canonical JSON (RFC 8785)` });
        }
      })
  );
}

const JSON_OBJECT_MAX_DEPTH = 63;

/**
 * The first thing in `value` no store keeps, or nesting deeper than `max` containers (itself
 * counted), with where it is; walked without recursion.
 */
function jsonObjectProblem(value: unknown, max: number): { path: PropertyKey[]; message: string } | null {
  const storable = (text: string) => text.isWellFormed() && !text.includes('\u0000');
  const todo: [unknown, PropertyKey[]][] = [[value, []]];
  while (todo.length > 0) {
    const [v, path] = todo.pop()!;
    if (path.length >= max) return { path, message: `must not nest deeper than ${max} levels` };
    for (const [name, member] of Object.entries(v as object)) {
      const at = [...path, Array.isArray(v) ? Number(name) : name];
      if (!storable(name)) return { path: at, message: 'member names must be well-formed Unicode without NUL characters' };
      if (typeof member === 'string' && !storable(member))
        return { path: at, message: 'must be well-formed Unicode without NUL characters' };
      if (typeof member === 'number' && !Number.isFinite(member)) return { path: at, message: 'must be a number within a 64-bit float' };
      if (member !== null && typeof member === 'object') todo.push([member, at]);
    }
  }
  return null;
}

const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/**
 * Text of `min` to `max` characters, counted as Unicode code points (as JSON Schema counts them).
 * Refuses NUL and lone surrogates, which PostgreSQL cannot store and hashing cannot agree on,
 * and, when min ≥ 1, text that is only whitespace.
 */
export function text(min: number, max: number) {
  return z
    .string()
    .check((ctx) => {
      const value = ctx.value;
      const n = codePoints(value);
      if (n < min)
        ctx.issues.push({ code: 'custom', input: value, message: min === 1 ? 'must not be empty' : `must be at least ${min} characters` });
      else if (n > max) ctx.issues.push({ code: 'custom', input: value, message: `must be at most ${max} characters` });
      else if (min >= 1 && value.trim().length === 0)
        ctx.issues.push({ code: 'custom', input: value, message: 'must not be only whitespace' });
      if (!value.isWellFormed() || value.includes('\u0000'))
        ctx.issues.push({ code: 'custom', input: value, message: 'must be well-formed Unicode without NUL characters' });
    })
    .meta({ minLength: min, maxLength: max });
}

/** A UUID in any case, handed on lower-cased (as PostgreSQL returns it), so comparisons and payloads agree. */
export const id = () => z.uuid().transform((s) => s.toLowerCase());

/** ISO 8601 UTC with milliseconds and Z, as every timestamp this API writes. */
export const timestamp = () => z.string().meta({ format: 'date-time', example: '2026-11-20T10:00:00.000Z' });

export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;
export const EVENT_TYPE_PATTERN_SOURCE = '^[a-z][a-z0-9_.-]{0,99}$';

/** Headers a mutation may carry; documented on each mutation. */
export const mutationHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN)
    .optional()
    .meta({
      description:
        'Makes a retry safe. Scoped to the workspace, kept at least 24 hours. Same key and same body: the original ' +
        'response is replayed (200, duplicate: true). Same key, different body: 422 idempotency_conflict.',
    }),
  'x-correlation-id': z
    .uuid()
    .optional()
    .meta({ description: 'Groups the ledger events of one piece of work across requests (correlationId). Default: the request id.' }),
  'x-context-manifest-digest': z
    .string()
    .regex(/^sha256:[0-9a-f]{64}$/)
    .optional()
    .meta({
      description:
        'sha256:<hex> of the context manifest the agent acted on (prompt, tools, inputs), recorded as contextManifestDigest. ' +
        'Default: the digest of the empty manifest {}.',
    }),
});

export const apiMeta = z.object({
  apiVersion: z.literal('1'),
  workspaceId: z.uuid(),
});

export const ledgerEventSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    sequence: z.int().min(1).meta({ description: 'Position in the workspace chain: 1, 2, 3 … without gaps, in commit order.' }),
    ownerId: z.uuid().meta({
      description: 'The human accountable for the actor (the API key’s owner, the user, or the workspace owner for system jobs).',
    }),
    aggregateType: z.string(),
    aggregateId: z.uuid(),
    aggregateVersion: z.int().min(1).meta({ description: '1 for the event that creates the aggregate, then +1 per event.' }),
    eventType: z.string().regex(new RegExp(EVENT_TYPE_PATTERN_SOURCE)),
    schemaVersion: z.int(),
    actorType: z.enum(['api_key', 'human', 'system']),
    actorId: z.string(),
    payload: z.record(z.string(), z.unknown()),
    payloadDigest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .meta({ description: 'sha256 of the RFC 8785 canonical payload.' }),
    occurredAtCanonical: timestamp(),
    idempotencyKey: z.string().nullable(),
    causationId: z.uuid().meta({ description: 'The request (X-Request-Id) that caused the event.' }),
    correlationId: z.uuid(),
    contextManifestDigest: z.string(),
    previousHash: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .meta({ description: 'eventHash of the previous event; sha256: + 64 zeros for the first.' }),
    eventHash: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .meta({ description: 'sha256 of the RFC 8785 canonical event without eventHash.' }),
  })
  .meta({ id: 'LedgerEvent', description: 'One accepted change, hash-chained within its workspace.' });

export const errorBodySchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'A code of GET /api/v1/errors.' }),
      message: z.string(),
      details: z.record(z.string(), z.unknown()),
      requestId: z.uuid(),
      timestamp: timestamp(),
      docsUrl: z.url(),
      retryAfter: z.int().min(0).meta({ description: 'Seconds to wait before retrying; 0 when not applicable.' }),
    }),
  })
  .meta({ id: 'Error' });
