/**
 * /api/v1 under `next dev`. In production scripts/serve.mjs serves /api/v1 from node:http before
 * Next.js sees the request (server/http/node-api.ts); this route hands the same transport a view
 * of Next's Request instead.
 */
import { createRestHandler } from '@/server/api/rest';
import { fetchApiHandler } from '@/server/http/fetch-api';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const handle = fetchApiHandler(createRestHandler({ runtime: getRuntime }));

export { handle as GET, handle as POST, handle as PUT, handle as PATCH, handle as DELETE, handle as HEAD };
