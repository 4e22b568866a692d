/**
 * A command-line tool that opens the database, and how it runs.
 *
 * A tool is declared with its options (`spec`), what it does before it needs the database
 * (`prepare`: checks, reading files, a bundle verified on this machine's cores) and what it does
 * with it (`run`). scripts/tool.mjs calls its `main`: the options are parsed here, `prepare` runs
 * here, and then `run` runs
 * - here, on a runtime of its own, when the database is free to open (PostgreSQL, always; PGlite
 *   when no process holds its directory);
 * - or in the running service, when it holds the embedded database's directory (PGlite allows one
 *   process): `run` goes to it over its local socket (scripts/tool-service.ts) and what it writes
 *   comes back here, as do its exit status and its messages, unchanged.
 *
 * `run` writes only through its ToolIO and ends by returning its exit status or throwing ToolExit
 * (scripts/cli.ts `fail`), never process.exit: in the service it shares the process.
 *
 * A reader that stops early (`npm run ledger:export -- … | head`) closes the pipe, and what the tool
 * writes after that fails with EPIPE. That is the reader's choice, not the tool's failure: the tool
 * stops writing and ends quietly (no message), with status 0 when the closed pipe ended its run.
 */
import type { Writable } from 'node:stream';
import { parseEnv } from '@/server/env';
import { createRuntime, type Runtime } from '@/server/runtime';
import { parseCli, ToolExit, type CliOption, type CliSpec, type CliValues } from './cli';
import { runInService, toolSocketPath } from './tool-socket';

/** What a tool writes to, wherever it runs. */
export interface ToolIO {
  /** A line to stdout (console.log's). */
  log(line: string): void;
  /** A line to stderr. */
  error(line: string): void;
  /** Standard output as a stream, for output written as it is read (ledger:export). */
  stdout: Writable;
  /** Text to stderr as it is (progress lines rewritten in place). */
  progress(text: string): void;
  /** Whether the user's stderr is a terminal. */
  stderrIsTTY: boolean;
}

export interface DbTool<O extends Record<string, CliOption>, I> {
  spec: CliSpec<O>;
  /**
   * Before the database, in the tool's own process: returns what `run` needs, as plain data (it may
   * cross to the service), files named by absolute paths (the service has its own directory).
   */
  prepare(values: CliValues<O>, io: ToolIO): I | Promise<I>;
  /** With the database: returns the exit status. */
  run(runtime: Runtime, input: I, io: ToolIO): Promise<number>;
}

/** A tool as scripts/tool.mjs and the service load it: its parts, and `main` to run it as a command. */
export type LoadedTool = DbTool<Record<string, CliOption>, unknown> & { main(name: string): Promise<never> };

export function dbTool<O extends Record<string, CliOption>, I = CliValues<O>>(
  tool: Omit<DbTool<O, I>, 'prepare'> & Partial<Pick<DbTool<O, I>, 'prepare'>>,
): LoadedTool {
  const full = { prepare: (values: CliValues<O>) => values as unknown as I, ...tool } as DbTool<O, I>;
  return { ...(full as unknown as DbTool<Record<string, CliOption>, unknown>), main: (name) => main(name, full) };
}

/** The error writing to a pipe whose reader has gone (`| head`). */
function isClosedPipe(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'EPIPE';
}

function consoleIO(): ToolIO {
  return {
    log: (line) => console.log(line),
    error: (line) => console.error(line),
    stdout: process.stdout,
    progress: (text) => process.stderr.write(text),
    stderrIsTTY: Boolean(process.stderr.isTTY),
  };
}

/** What a run's end means as an exit status (its message, if any, said on `io`). */
export function exitOf(err: unknown, io: Pick<ToolIO, 'error'>): number {
  if (err instanceof ToolExit || (err as { name?: unknown } | null)?.name === 'ToolExit') {
    const e = err as ToolExit;
    if (e.message) io.error(e.message);
    return e.exitCode;
  }
  if (isClosedPipe(err)) return 0;
  io.error((err as Error).message ?? String(err));
  return 1;
}

async function main<O extends Record<string, CliOption>, I>(name: string, tool: DbTool<O, I>): Promise<never> {
  // Without a listener the stream's EPIPE is an uncaught 'error' event: a stack trace and status 1.
  // console.log's writes after it are dropped (the stream is destroyed); a pipeline into stdout
  // rejects with the same error, which ends the run with status 0.
  process.stdout.on('error', (err) => {
    if (!isClosedPipe(err)) throw err;
  });
  const values = parseCli(tool.spec);
  const io = consoleIO();
  let code: number;
  try {
    const input = await tool.prepare(values, io);
    code = await runHereOrInService(name, tool, input, io);
  } catch (err) {
    code = exitOf(err, io);
  }
  process.exit(code);
}

async function runHereOrInService<I>(name: string, tool: DbTool<Record<string, CliOption>, I>, input: I, io: ToolIO): Promise<number> {
  const env = parseEnv(process.env);
  const socket = env.DATABASE_URL ? null : toolSocketPath(env.PGLITE_DATA_DIR);
  if (socket) {
    const code = await runInService(socket, { tool: name, input, stderrIsTTY: io.stderrIsTTY });
    if (code !== null) return code;
  }
  let runtime: Runtime;
  try {
    runtime = await createRuntime(env);
  } catch (err) {
    const message = (err as Error).message;
    if (socket && /is in use by another process/.test(message)) {
      throw new ToolExit(
        1,
        `The PGlite data directory ${env.PGLITE_DATA_DIR} is in use by another process, and no running service answers at ${socket}: ` +
          'let the other tool finish, or stop the server (Ctrl-C where `npm start` runs), then run this again.',
      );
    }
    throw new ToolExit(1, message);
  }
  // Closing sends the NOTIFYs of the ledgers the tool's commits moved (server/ledger/wake.ts): a
  // running server's open leases (PostgreSQL) hear of a key created or revoked here as of any other commit.
  try {
    return await tool.run(runtime, input, io);
  } finally {
    await runtime.close();
  }
}
