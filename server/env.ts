/**
 * The service's settings: every one the service understands is declared, defaulted and validated
 * here, and the code under server/ asks `env()` for a typed value instead of reading process.env.
 * Two places stand outside it on purpose: scripts/serve.mjs reads where to listen and its HTTP
 * timeouts before any of server/ is loaded, and server/boot.ts sets NEXTAUTH_URL for next-auth.
 */
import net from 'node:net';
import { z } from 'zod';

const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/;
/** A host name, or an IPv4 or IPv6 literal (brackets optional): what a URL's host may be. */
const isHostOrIp = (host: string) => HOST_NAME.test(host) || net.isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0;

const intFromString = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** PostgreSQL connection string. Unset: embedded PGlite in PGLITE_DATA_DIR. */
  DATABASE_URL: z.url().optional(),
  /** Where embedded PGlite keeps its files; `memory://` keeps nothing. */
  PGLITE_DATA_DIR: z.string().min(1).default('.data/pglite'),
  /** Connections in the PostgreSQL pool (per process). */
  DB_POOL_MAX: intFromString(10, 1, 200),
  /**
   * How many transactions at a time POST /work to different workspaces may share (db/group.ts,
   * shared groups): each runs its writes one after another on one connection.
   */
  DB_SHARED_GROUPS: intFromString(2, 1, 64),
  /** How long a write waits for a workspace's append lock before answering 503. */
  DB_LOCK_TIMEOUT_MS: intFromString(5000, 1, 600000),
  /** Upper bound on any single statement; past it the request answers 503. */
  DB_STATEMENT_TIMEOUT_MS: intFromString(30000, 1, 3600000),
  /** The signed-in human interface; resolve_url and docs links are built from it. */
  APP_URL: z.url().default('http://localhost:3000'),
  /**
   * Secret for session cookies. Unset: a random secret is generated once and kept in the
   * database (table instance_secrets), so every instance sharing the database agrees.
   */
  AUTH_SECRET: z.string().min(32).optional(),
  /** Largest accepted API request body, in bytes. */
  API_BODY_LIMIT_BYTES: intFromString(1024 * 1024, 1024, 64 * 1024 * 1024),
  /** Idempotency records are kept at least this many hours. */
  IDEMPOTENCY_TTL_HOURS: intFromString(24, 24, 24 * 30),
  /** Webhook delivery attempts (GET …/deliveries) are kept this many days, then deleted. */
  DELIVERY_LOG_DAYS: intFromString(30, 1, 3650),
  /** Event-stream leases send a `: keepalive` comment at least this often (docs/contract.md §4.9: at most 15 s). */
  SSE_KEEPALIVE_MS: intFromString(15000, 10, 15000),
  /**
   * Event-stream leases one API key may hold open at once on one instance; one more is 429
   * rate_limited, Retry-After saying when the key's first lease ends. Each lease holds a socket
   * and a place in its workspace's feed, so a leaking or hostile client cannot pile them up.
   */
  SSE_LEASES_PER_KEY: intFromString(20, 1, 100_000),
  /** MCP sessions one API key may hold open at once on one instance; one more is 429 rate_limited. */
  MCP_SESSIONS_PER_KEY: intFromString(1000, 1, 100_000),
  /**
   * New event-stream leases, MCP sessions and MCP waits are refused (503, Retry-After) while the
   * heap is past this share of its limit (server/capacity.ts): open ones go on, the process stays up.
   */
  WAITERS_HEAP_PERCENT: intFromString(80, 1, 100),
  /**
   * An MCP session (server/mcp/http.ts) with no request for this long, and none in flight, is
   * closed; its client starts a new one when it next calls (the protocol's 404 rule).
   */
  MCP_SESSION_IDLE_MS: intFromString(30 * 60_000, 1000, 24 * 60 * 60_000),
  /** Requests a minute one API key may make to /api/v1 (all instances together). */
  RATE_LIMIT_API_PER_MIN: intFromString(1200, 1, 10_000_000),
  /** Requests a minute one client address may make to the public receipt validator (all instances together). */
  RATE_LIMIT_VALIDATOR_PER_MIN: intFromString(60, 1, 10_000_000),
  /**
   * Writes a minute one signed-in person may make through tRPC (the web interface's /api/trpc, and
   * their session at /api/v1), all their sessions and all instances together; past it 429 rate_limited.
   */
  RATE_LIMIT_SESSION_WRITES_PER_MIN: intFromString(120, 1, 10_000_000),
  /**
   * The bytes of artifact content (POST /artifacts `content`, stored once per digest) one workspace
   * may hold; a registration that would pass it is 403 quota_exceeded. Default 1 GiB.
   */
  ARTIFACT_QUOTA_BYTES: intFromString(1024 * 1024 * 1024, 0, Number.MAX_SAFE_INTEGER),
  /**
   * Reverse proxies in front of the service that append to X-Forwarded-For. The client address is
   * the entry this many places left of the last one (0: the address that connected to us).
   */
  TRUSTED_PROXY_HOPS: intFromString(0, 0, 10),
  /**
   * Sign-in attempts one account, or one client address, may make in SIGN_IN_WINDOW_MINUTES (all
   * instances together); past it, attempts are refused without checking the password. Invitation
   * and setup links are limited the same way per client address.
   */
  SIGN_IN_MAX_ATTEMPTS: intFromString(10, 1, 10_000),
  SIGN_IN_WINDOW_MINUTES: intFromString(15, 1, 24 * 60),
  /**
   * On first start with an empty database, create the demo workspace and print its key. false: print
   * a one-time setup link (/setup?token=…) instead, which creates the first account and workspace.
   */
  SEED_DEMO: z.stringbool().default(true),
  /**
   * Where invitation emails are sent through (nodemailer): smtp://user:pass@host:port, or smtps://
   * for TLS from the start. Unset: no email is sent; the owner copies the link from the page.
   */
  SMTP_URL: z.url().optional(),
  /** The From of the emails the service sends. */
  MAIL_FROM: z.string().min(3).default('Accountable Work Service <no-reply@localhost>'),
  /**
   * Webhook URLs that resolve to loopback, private, link-local or metadata addresses are refused,
   * at creation and at every connection, unless this is true (a receiver on your own network).
   */
  WEBHOOKS_ALLOW_PRIVATE: z.stringbool().default(false),
  /**
   * Host names and IP literals, comma-separated, that upstream MCP server URLs (POST /mcp-servers)
   * may reach although they resolve to loopback, private or link-local addresses: an upstream on
   * the operator's own network. Every other upstream must resolve to public addresses only, as
   * webhooks must: an owner's key chooses the URL, and the service then calls it from inside.
   */
  MCP_UPSTREAM_ALLOW_HOSTS: z
    .string()
    .default('')
    .transform((list) =>
      list
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter((h) => h.length > 0),
    )
    .pipe(z.array(z.string().refine(isHostOrIp, 'must be a host name or an IP literal, without scheme or port'))),
  /** How long a receiver has to answer a delivery before it counts as failed. */
  WEBHOOK_TIMEOUT_MS: intFromString(10_000, 100, 60_000),
  /** The first retry's delay; each later one doubles it (with jitter), up to an hour. */
  WEBHOOK_RETRY_BASE_MS: intFromString(5_000, 10, 3_600_000),
  /** How long an event is retried after its first failure before the endpoint is disabled (24 h). */
  WEBHOOK_RETRY_FOR_MS: intFromString(86_400_000, 1_000, 30 * 86_400_000),
  /** How long an instance holds an endpoint while delivering to it (another takes over after). */
  WEBHOOK_LEASE_MS: intFromString(30_000, 1_000, 600_000),
  /** How often due retries are looked for (commits wake the deliveries they concern at once). */
  WEBHOOK_POLL_MS: intFromString(1_000, 10, 60_000),
  /**
   * The key webhook signing secrets are encrypted with at rest (any string of 32+ characters).
   * Unset: a key generated in the database's instance secrets. Set it to keep the two apart.
   */
  WEBHOOK_SECRET_KEY: z.string().min(32).optional(),
  /** A checkpoint is signed at most this long after a commit (the ledger integrator's period). */
  CHECKPOINT_INTERVAL_MS: intFromString(1_000, 10, 3_600_000),
  /**
   * The key the workspaces' checkpoint and grant signing keys are encrypted with at rest (32+ characters).
   * Unset: a key generated in the database's instance secrets.
   */
  LEDGER_KEY_SECRET: z.string().min(32).optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
});

export type Env = z.infer<typeof envSchema>;

/** Parses a given environment (tests pass their own). Throws one readable error listing every bad setting. */
export function parseEnv(source: Record<string, string | undefined>): Env {
  // Empty strings mean "unset" (a blank line in a .env file must not become a value).
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const result = envSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid environment:\n${lines.join('\n')}`);
  }
  return result.data;
}

let cached: Env | undefined;

/** The process environment, parsed once on first use (never at import time, so builds do not need it). */
export function env(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}
