/**
 * A schema's refusal as the contract's error: the sentence and the issues every door answers with,
 * REST (server/api/rest.ts, which names each member where the caller put it) and the web interface's
 * /api/trpc (the error formatter of server/api/trpc.ts), so neither shows zod's own dump of issues.
 */
import { AppError } from '@/server/errors';

export interface ZodLikeIssue {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
}

/** True when `value` carries a schema's issues (a ZodError, or tRPC's wrapping of one). */
export function hasIssues(value: unknown): value is { issues: ZodLikeIssue[] } {
  return typeof value === 'object' && value !== null && Array.isArray((value as { issues?: unknown }).issues);
}

/**
 * Unknown keys win over other issues: the caller sent something this operation does not define.
 * `name` spells a member's path (dotted by default).
 */
export function fromValidationIssues(issues: ZodLikeIssue[], name: (dotted: string) => string = (d) => d): AppError {
  const named = (path: PropertyKey[]) => name(path.map(String).join('.'));
  const unknown = issues.filter((i) => i.code === 'unrecognized_keys');
  if (unknown.length > 0) {
    const fields = unknown.flatMap((i) => (i.keys ?? []).map((k) => named([...i.path, k])));
    return new AppError('unknown_field', `Unknown field${fields.length > 1 ? 's' : ''}: ${fields.join(', ')}.`, { fields });
  }
  const list = issues.map((i) => ({ path: named(i.path), message: i.message }));
  const first = list[0];
  return new AppError('validation_failed', first ? `${first.path || 'body'}: ${first.message}` : 'The request is not valid.', {
    issues: list,
  });
}
