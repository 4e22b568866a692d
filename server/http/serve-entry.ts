/**
 * What scripts/serve.mjs runs the API from: the hooks of server/http/serve-hooks.ts, bundled
 * (scripts/bundle.mjs) and loaded without Next.js.
 */
import { boot } from '@/server/boot';
import { endEventStreams } from '@/server/api/event-stream';
import { log } from '@/server/log';
import { metricsText } from '@/server/metrics';
import { onStop } from '@/server/shutdown';
import { boundedForNext } from './next-bodies';
import { handleApiRequest } from './node-api';
import { endMcpSessions, handleMcpRequest } from './node-mcp';
import type { ServerHooks } from './serve-hooks';
import { transportSecurityHeaders } from './transport-security';

export const hooks: ServerHooks = {
  handleApiRequest,
  handleMcpRequest,
  endMcpSessions,
  boundedForNext,
  endEventStreams,
  onStop,
  metricsText,
  boot,
  log,
  transportSecurityHeaders,
};
