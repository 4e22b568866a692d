/**
 * The public receipt validator: a receipt document (bytes) in, `{ valid, issues }` out, storing
 * nothing. Order of checks: size (while reading, by the transport), then strict JSON with the
 * traversal limits (depth, nodes, duplicate and __proto__ keys) applied before any schema
 * evaluation, then the JSON Schema (ajv, compiled once, with no way to load a remote $ref),
 * reporting at most MAX_ISSUES issues as JSON pointers.
 */
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import schema from './agent-work-receipt.v0.1.schema.json';
import { readStrictJson, type StrictJsonProblem } from '@/server/strict-json';

export const RECEIPT_SCHEMA_VERSION = 'agent-work-receipt/v0.1';
export const RECEIPT_SCHEMA = schema as Record<string, unknown>;
export const LIMITS = { max_bytes: 262_144, max_depth: 64, max_nodes: 50_000, max_issues: 100, apply_before_schema: true } as const;

export interface Issue {
  path: string;
  code: string;
  message: string;
}

export type ValidationOutcome = { ok: true; valid: boolean; issues: Issue[] } | ReadingFailure;

type ReadingFailure = { ok: false; code: 'input.invalid_json' | 'input.structure_limit'; message: string; issues: Issue[] };

/** Why a document's text was refused before the schema (the import words it in the API's envelope). */
type ReadingRefusal = ReadingFailure & { problem: StrictJsonProblem };

// strict: true refuses unknown keywords in our own schema; no loadSchema: a remote $ref is an
// error at compile time, never a fetch.
const ajv = new Ajv2020({ allErrors: true, strict: true });
const check = ajv.compile(RECEIPT_SCHEMA);

function issueOf(e: ErrorObject): Issue {
  const missing = e.keyword === 'required' ? `/${String((e.params as { missingProperty: string }).missingProperty)}` : '';
  const extra = e.keyword === 'additionalProperties' ? `/${String((e.params as { additionalProperty: string }).additionalProperty)}` : '';
  return { path: `${e.instancePath}${missing}${extra}`, code: `schema.${e.keyword}`, message: e.message ?? 'is invalid' };
}

/**
 * A receipt document's text read with the traversal limits (depth, nodes, duplicate and __proto__
 * keys), before any schema sees it: the value, or why it was refused in the validator's terms.
 */
export function readReceiptText(text: string): { ok: true; value: unknown } | ReadingRefusal {
  const read = readStrictJson(text, { maxDepth: LIMITS.max_depth, maxNodes: LIMITS.max_nodes, refuseProtoKey: true });
  if (read.ok) return read;
  const p = read.problem;
  if (p.kind === 'syntax') {
    return { ok: false, code: 'input.invalid_json', message: `Not JSON: ${p.message} at byte offset ${p.offset}.`, issues: [], problem: p };
  }
  const code = p.kind === 'depth' || p.kind === 'nodes' ? 'input.structure_limit' : 'input.invalid_json';
  return { ok: false, code, message: p.message, issues: [{ path: p.path, code: `input.${p.kind}`, message: p.message }], problem: p };
}

/** A read document against the receipt schema: at most LIMITS.max_issues issues, as JSON pointers. */
export function checkReceipt(value: unknown): { valid: boolean; issues: Issue[] } {
  if (check(value)) return { valid: true, issues: [] };
  return { valid: false, issues: (check.errors ?? []).slice(0, LIMITS.max_issues).map(issueOf) };
}

export function validateReceiptText(text: string): ValidationOutcome {
  const read = readReceiptText(text);
  // What no store keeps is a document the import refuses (validation_failed): not valid, here too.
  if (!read.ok && read.problem.kind === 'unstorable') return { ok: true, valid: false, issues: read.issues };
  if (!read.ok) return { ok: false, code: read.code, message: read.message, issues: read.issues };
  return { ok: true, ...checkReceipt(read.value) };
}
