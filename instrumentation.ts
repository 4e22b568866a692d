/**
 * Next.js calls register() once when the server starts, before it serves requests: the database
 * is opened and migrated and the demo workspace seeded here, not on the first request.
 *
 * When scripts/serve.mjs runs Next, it also waits here for the /api/v1 handler: taken from this
 * module graph, the one copy of the server Next has built, so the API and the pages share every
 * module (there is no second bundle of server/).
 */
import type { ServerHooks } from './server/http/serve-hooks';

export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  const { boot } = await import('./server/boot');
  const waiting = (globalThis as { [key: symbol]: ((hooks: ServerHooks) => void) | undefined })[Symbol.for('aws.serve-hooks')];
  if (waiting) {
    const [
      { handleApiRequest },
      { handleMcpRequest, endMcpSessions },
      { boundedForNext },
      { endEventStreams },
      { onStop },
      { metricsText },
    ] = await Promise.all([
      import('./server/http/node-api'),
      import('./server/http/node-mcp'),
      import('./server/http/next-bodies'),
      import('./server/api/event-stream'),
      import('./server/shutdown'),
      import('./server/metrics'),
    ]);
    waiting({ handleApiRequest, handleMcpRequest, endMcpSessions, boundedForNext, endEventStreams, onStop, metricsText, boot });
  }
  await boot();
}
