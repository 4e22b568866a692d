/** GET /errors: the error codes, with their status, meaning and what to do. */
import { z } from 'zod';
import { AppError, errorCodes, errorTable, isErrorCode, type ErrorCode } from '@/server/errors';
import { publicProcedure } from '../../trpc';

const errorDoc = z
  .object({
    code: z.string(),
    status: z.int(),
    meaning: z.string(),
    action: z.string(),
    retryAfter: z.int().meta({ description: 'Seconds a client should wait before retrying; 0 when retrying will not help.' }),
  })
  .meta({ id: 'ErrorCodeDoc' });

function docOf(code: ErrorCode) {
  const spec = errorTable[code];
  return { code, status: spec.status, meaning: spec.meaning, action: spec.action, retryAfter: 'retryAfter' in spec ? spec.retryAfter : 0 };
}

export const errorsProcedure = publicProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/errors',
      tags: ['meta'],
      summary: 'Document the error codes',
      description: 'With `code`: that code’s status, meaning and what to do. Without: every code. No credential needed.',
      protect: false,
    },
    errorCodes: ['not_found'],
  })
  .input(z.strictObject({ code: z.string().max(100).optional() }))
  .output(z.object({ data: z.array(errorDoc), meta: z.object({ apiVersion: z.literal('1'), count: z.int() }) }))
  .query(({ input }) => {
    if (input.code !== undefined && !isErrorCode(input.code)) {
      throw new AppError('not_found', `No error code ${JSON.stringify(input.code)}. Call GET /api/v1/errors for the list.`);
    }
    const data = input.code !== undefined ? [docOf(input.code as ErrorCode)] : errorCodes.map(docOf);
    return { data, meta: { apiVersion: '1' as const, count: data.length } };
  });
