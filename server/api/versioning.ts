/**
 * Versioned resources over REST (docs/contract.md §8.2): the ETag is the aggregateVersion, quoted; If-Match
 * names the version a change is based on (weak or strong), and a resource that has moved past it is
 * 412 precondition_failed (the service compares; this reads the header).
 */
import type { HeaderReader } from '@/server/http/exchange';
import { z } from 'zod';
import { AppError } from '@/server/errors';
import { mutationHeaders } from './schemas';

export const etag = (version: number) => `"${version}"`;

/** The headers of a PATCH: the mutation headers and If-Match. */
export const patchHeaders = mutationHeaders.extend({
  'if-match': z
    .string()
    .regex(/^(W\/)?"\d{1,9}"$/)
    .optional()
    .meta({
      description: 'The ETag (aggregateVersion) the change is based on. When the resource has moved past it: 412 precondition_failed.',
    }),
});

/** The version If-Match names, or undefined without one; 400 for a value that is no ETag of this API. */
export function ifMatchOf(headers: HeaderReader): number | undefined {
  const header = headers.get('if-match');
  if (header === null) return undefined;
  const m = /^(?:W\/)?"(\d{1,9})"$/.exec(header.trim());
  if (!m)
    throw new AppError('validation_failed', 'If-Match must be an ETag of this API: "<aggregateVersion>".', {
      issues: [{ path: 'header.if-match', message: 'a quoted version, e.g. "3"' }],
    });
  return Number(m[1]);
}
