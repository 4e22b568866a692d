/**
 * What scripts/serve.mjs takes from the server (server/http/serve-entry.ts, bundled on its own).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Runtime } from '@/server/runtime';
import type { StopPhase } from '@/server/shutdown';
import type { log } from '@/server/log';

export interface ServerHooks {
  /** Serves one /api/v1 request (server/http/node-api.ts). */
  handleApiRequest(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Serves one /mcp request (server/http/node-mcp.ts). */
  handleMcpRequest(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends MCP waits and sessions (stopping). */
  endMcpSessions(): Promise<void>;
  /** The request to hand Next with its body read under the limit, or null once answered (server/http/next-bodies.ts). */
  boundedForNext(req: IncomingMessage, res: ServerResponse): Promise<IncomingMessage | null>;
  /** Ends open event-stream leases with lease_end (stopping). */
  endEventStreams(): Promise<number>;
  onStop(phase: StopPhase, hook: () => Promise<void>): void;
  /** The metrics in the Prometheus text format (server/metrics.ts), for the METRICS_PORT listener. */
  metricsText(): Promise<{ contentType: string; text: string }>;
  /** Settles once the database is open and the service has started. */
  boot(): Promise<Runtime>;
  /** The service's log (server/log.ts). */
  log: typeof log;
  /** Headers every answer carries for this APP_URL (HSTS when it is https: server/http/transport-security.ts). */
  transportSecurityHeaders(appUrl: string): Readonly<Record<string, string>>;
}
