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

/** A database error's own fields, as postgres.js (`*_name`) and PGlite (bare) name them. */
interface DriverError {
  code?: unknown;
  constraint_name?: unknown;
  constraint?: unknown;
  table_name?: unknown;
  table?: unknown;
  column_name?: unknown;
  column?: unknown;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * What a database error may say in a log line: its SQLSTATE and where (constraint, table, column).
 * Never its message or detail: PostgreSQL echoes input there (`invalid input syntax for type
 * json: "…"`, `Key (email)=(…) already exists`).
 */
function describeDriverError(err: DriverError): string {
  const where = [
    ['constraint', err.constraint_name ?? err.constraint],
    ['table', err.table_name ?? err.table],
    ['column', err.column_name ?? err.column],
  ]
    .filter(([, value]) => typeof value === 'string' && value !== '')
    .map(([name, value]) => `${name} ${String(value)}`);
  return `database error ${String(err.code)}${where.length > 0 ? ` (${where.join(', ')})` : ''}`;
}

/** The head of a failed statement's SQL (placeholders, never their values), for where it failed. */
function statementHead(query: string): string {
  const flat = query.replace(/\s+/g, ' ').trim();
  return flat.length > 80 ? `${flat.slice(0, 80)}…` : flat;
}

/**
 * An error for the log: its message and code, and those of what it wraps (Drizzle wraps the
 * driver's). A failed query is named by its statement's head and its database error by SQLSTATE,
 * constraint and table: Drizzle's own message lists the query's parameters (a new user's password
 * hash, a checkpoint's whole state), and the driver's echoes input, so neither is ever written.
 */
export function describeError(err: unknown, depth = 0): string {
  if (!(err instanceof Error)) return typeof err === 'object' && err !== null ? '[non-error object]' : String(err);
  const code = (err as { code?: unknown }).code;
  const query = (err as { query?: unknown }).query;
  let own: string;
  if (typeof query === 'string' && 'params' in err) own = `Failed query: ${statementHead(query)}`;
  else if (typeof code === 'string' && SQLSTATE.test(code)) own = describeDriverError(err as DriverError);
  else {
    // A wrapper that repeats what it wraps (tRPC takes a failed query's message as its own) says
    // only what it is: the cause says the rest, safely.
    const cause = (err as { cause?: unknown }).cause;
    const repeats = cause instanceof Error && cause.message !== '' && err.message.includes(cause.message);
    own = `${err.name}${repeats ? '' : `: ${err.message}`}${typeof code === 'string' ? ` (${code})` : ''}`;
  }
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && depth < 3 ? `${own}; caused by ${describeError(cause, depth + 1)}` : own;
}

/** Where an error was thrown: its stack's frames only (the stack's first lines repeat the message). */
export function stackFrames(err: unknown): string | undefined {
  const stack = (err as { stack?: unknown } | null)?.stack;
  if (typeof stack !== 'string') return undefined;
  return stack
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .join('\n');
}

/** True when `err` or what it wraps is a database error (a failed query, a SQLSTATE). */
function isDatabaseError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if ('params' in e || (typeof code === 'string' && SQLSTATE.test(code))) return true;
  }
  return false;
}

/**
 * Database errors that others print in this process go out as describeError says them too. Next
 * prints what a page's render threw with console.error(error); a failed query reaches it wrapped
 * in tRPC's error, whose message is the query's own, parameters and all.
 */
export function redactDatabaseErrorsInConsole(target: Pick<Console, 'error' | 'warn' | 'log'> = console): void {
  for (const level of ['error', 'warn', 'log'] as const) {
    const print = target[level].bind(target);
    target[level] = (...args: unknown[]) =>
      print(...args.map((arg) => (isDatabaseError(arg) ? `${describeError(arg)}\n${stackFrames(arg) ?? ''}` : arg)));
  }
}
