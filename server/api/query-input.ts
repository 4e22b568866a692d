/**
 * The query string as a procedure's input, and the refusal of a query where an operation takes
 * none: shared by the transport (rest.ts) and the operations it serves itself (served-operations.ts).
 */
import { AppError } from '@/server/errors';

/**
 * The query as a procedure's input: a parameter given once is a value, except where the input
 * takes a list (repeatable parameters); one given more often is a list (which a scalar schema then
 * refuses, rather than one of the values being picked silently). Collected without a prototype, so
 * a parameter named like an Object.prototype member (`?constructor=x`) is an unknown field.
 */
export function queryInput(url: URL, arrayParams: ReadonlySet<string>): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    out[key] = values.length === 1 && !arrayParams.has(key) ? values[0] : values;
  }
  return out;
}

/** Operations with a body define no query parameters; like unknown body fields, they are refused. */
export function queryOnBodyOperation(url: URL): AppError {
  const fields = [...new Set(url.searchParams.keys())].map((k) => `query.${k}`);
  return new AppError('unknown_field', `This operation takes no query parameters: ${fields.join(', ')}.`, { fields });
}
