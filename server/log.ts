/** Structured logs, one JSON object per line on stderr, filtered by LOG_LEVEL. */
import { env } from './env';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = Exclude<keyof typeof LEVELS, 'silent'>;

/** True when lines of `level` are written (LOG_LEVEL): a caller can skip building what would not be. */
export function logs(level: LogLevel): boolean {
  return LEVELS[level] >= LEVELS[env().LOG_LEVEL];
}

export function log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
  if (!logs(level)) return;
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
}

/** An error for the log: its message and code, and those of what it wraps (Drizzle wraps the driver's). */
export function describeError(err: unknown, depth = 0): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: string }).code;
  const own = `${err.name}: ${err.message}${code ? ` (${code})` : ''}`;
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && depth < 3 ? `${own}; caused by ${describeError(cause, depth + 1)}` : own;
}
