/**
 * The public receipt validator: a receipt document (bytes) in, `{ valid, issues }` out, storing
 * nothing. Order of checks: size (while reading, by the transport), then strict JSON with the
 * traversal limits (depth, nodes, duplicate and __proto__ keys) applied before any schema
 * evaluation, then the JSON Schema (ajv, compiled once, with no way to load a remote $ref),
 * reporting at most MAX_ISSUES issues as JSON pointers.
 */
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import schema from './agent-work-receipt.v0.1.schema.json';
import { parseStrictJson } from './strict-json';

export const RECEIPT_SCHEMA_VERSION = 'agent-work-receipt/v0.1';
export const RECEIPT_SCHEMA = schema as Record<string, unknown>;
export const LIMITS = { max_bytes: 262_144, max_depth: 64, max_nodes: 50_000, max_issues: 100, apply_before_schema: true } as const;

export interface Issue {
  path: string;
  code: string;
  message: string;
}

export type ValidationOutcome =
  | { ok: true; valid: boolean; issues: Issue[] }
  | { ok: false; code: 'input.invalid_json' | 'input.structure_limit'; message: string; issues: Issue[] };

// strict: true refuses unknown keywords in our own schema; no loadSchema: a remote $ref is an
// error at compile time, never a fetch.
const ajv = new Ajv2020({ allErrors: true, strict: true });
const check = ajv.compile(RECEIPT_SCHEMA);

function issueOf(e: ErrorObject): Issue {
  const missing = e.keyword === 'required' ? `/${String((e.params as { missingProperty: string }).missingProperty)}` : '';
  const extra = e.keyword === 'additionalProperties' ? `/${String((e.params as { additionalProperty: string }).additionalProperty)}` : '';
  return { path: `${e.instancePath}${missing}${extra}`, code: `schema.${e.keyword}`, message: e.message ?? 'is invalid' };
}

export function validateReceiptText(text: string): ValidationOutcome {
  const parsed = parseStrictJson(text, { maxDepth: LIMITS.max_depth, maxNodes: LIMITS.max_nodes });
  if (!parsed.ok) {
    const e = parsed.error;
    if (e.kind === 'syntax')
      return { ok: false, code: 'input.invalid_json', message: `Not JSON: ${e.message} at byte offset ${e.offset}.`, issues: [] };
    const code = e.kind === 'depth' || e.kind === 'nodes' ? 'input.structure_limit' : 'input.invalid_json';
    return { ok: false, code, message: e.message, issues: [{ path: e.path, code: `input.${e.kind}`, message: e.message }] };
  }
  if (check(parsed.value)) return { ok: true, valid: true, issues: [] };
  const issues = (check.errors ?? []).slice(0, LIMITS.max_issues).map(issueOf);
  return { ok: true, valid: false, issues };
}
