/** Every /api/v1 request: the REST transport over the tRPC procedures (server/api/rest.ts). */
import { createRestHandler } from '@/server/api/rest';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const handle = createRestHandler({ runtime: getRuntime });

export { handle as GET, handle as POST, handle as PUT, handle as PATCH, handle as DELETE, handle as HEAD };
