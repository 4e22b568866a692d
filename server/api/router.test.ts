import { describe, expect, it } from 'vitest';
import { appRouter } from './root';

type ZodLike = { _zod?: { def?: Record<string, any> } };

/** Walks the schema as trpc-to-openapi does when it decides what to coerce. */
function coercibleLeaves(schema: ZodLike, path: string, out: string[]): string[] {
  const def = schema._zod?.def;
  if (!def) return out;
  switch (def.type) {
    case 'number':
    case 'boolean':
    case 'bigint':
    case 'date':
      out.push(path);
      break;
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
      coercibleLeaves(def.innerType, path, out);
      break;
    case 'array':
      coercibleLeaves(def.element, `${path}[]`, out);
      break;
    case 'object':
      for (const [key, value] of Object.entries(def.shape as Record<string, ZodLike>)) coercibleLeaves(value, `${path}.${key}`, out);
      break;
    default:
      break; // pipes (noCoerce) and strings are left alone by the adapter
  }
  return out;
}

describe('JSON body schemas', () => {
  it('have no number or boolean leaf the REST adapter would coerce from a string', () => {
    const offenders: string[] = [];
    for (const [name, procedure] of Object.entries(appRouter._def.procedures as Record<string, any>)) {
      const openapi = procedure._def.meta?.openapi;
      if (!openapi || openapi.method === 'GET') continue;
      for (const input of procedure._def.inputs as ZodLike[]) coercibleLeaves(input, name, offenders);
    }
    expect(offenders).toEqual([]);
  });
});
