/** tRPC for the human interface (session cookie). */
import { handleInternalTrpc } from '@/server/api/internal';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export { handleInternalTrpc as GET, handleInternalTrpc as POST };
