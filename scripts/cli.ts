/**
 * Shared pieces of the command-line tools: their options and help, the runtime from the
 * environment, and finding a workspace.
 *
 * Exit status, for every tool: 0 done, 1 it could not be done (no such workspace, no database),
 * 2 wrong usage (an unknown option, a missing or bad value: one line saying which, then the usage).
 * ledger:verify adds 3: the chain or bundle does not verify.
 *
 * A reader that stops early (`npm run ledger:export -- … | head`) closes the pipe, and what the tool
 * writes after that fails with EPIPE. That is the reader's choice, not the tool's failure: the tool
 * stops writing and ends quietly (no message), with status 0 when the closed pipe ended its run.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { and, asc, eq, or, sql } from 'drizzle-orm';
import type { Database } from '@/db';
import { memberships, workspaces } from '@/db/schema';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { parseEnv } from '@/server/env';
import { createRuntime, type Runtime } from '@/server/runtime';

/** The error writing to a pipe whose reader has gone (`| head`). */
function isClosedPipe(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'EPIPE';
}

// Without a listener the stream's EPIPE is an uncaught 'error' event: a stack trace and status 1.
// console.log's writes after it are dropped (the stream is destroyed); a pipeline into stdout
// rejects with the same error, which withRuntime takes as the end of the run.
process.stdout.on('error', (err) => {
  if (!isClosedPipe(err)) throw err;
});

export interface CliOption {
  type: 'string' | 'boolean';
  /** What the option is for, in the help. */
  description: string;
  /** The value's placeholder in the help (`<name|id>`), for string options. */
  value?: string;
  /** Given when the option is not. */
  default?: string;
  /** Wrong usage when missing. */
  required?: boolean;
}

export interface CliSpec<O extends Record<string, CliOption>> {
  /** The npm script: `key:create`. */
  command: string;
  /** One sentence: what the tool does. */
  summary: string;
  /** The forms of a call, after `npm run <command> --`. */
  usage: readonly string[];
  options: O;
  /** Lines the help ends with (exit codes beyond 0, 1 and 2, what it needs). */
  notes?: readonly string[];
}

type CliValues<O extends Record<string, CliOption>> = {
  [K in keyof O]: O[K]['type'] extends 'boolean' ? boolean | undefined : O[K] extends { default: string } ? string : string | undefined;
};

function usageText(spec: CliSpec<Record<string, CliOption>>): string {
  return spec.usage.map((u, i) => `${i === 0 ? 'Usage:' : '      '} npm run ${spec.command} -- ${u}`).join('\n');
}

function helpText(spec: CliSpec<Record<string, CliOption>>): string {
  const rows = Object.entries(spec.options).map(([name, o]) => {
    const left = `--${name}${o.type === 'string' ? ` ${o.value ?? '<value>'}` : ''}`;
    const extra = [o.required ? 'required' : '', o.default !== undefined ? `default ${JSON.stringify(o.default)}` : ''].filter(Boolean);
    return [left, `${o.description}${extra.length ? ` (${extra.join('; ')})` : ''}`];
  });
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([left]) => left!.length));
  return [
    `npm run ${spec.command}: ${spec.summary}`,
    '',
    usageText(spec),
    '',
    'Options:',
    ...rows.map(([left, right]) => `  ${left!.padEnd(width)}  ${right}`),
    '',
    'Exit status: 0 done, 1 it could not be done, 2 wrong usage.',
    ...(spec.notes ?? []),
  ].join('\n');
}

/** Wrong usage: one line saying what is wrong, then the usage, on stderr; exit 2. */
export function usageError(spec: CliSpec<Record<string, CliOption>>, message: string): never {
  console.error(`npm run ${spec.command}: ${message}\n${usageText(spec)}\n(--help lists every option.)`);
  process.exit(2);
}

/** The first sentence of node:util's parse error, said plainly. */
function parseProblem(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const option = /'(-{1,2}[^' ]+)/.exec(e.message ?? '')?.[1];
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) return `unknown option ${option}`;
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) return `${option} needs a value`;
  if (e.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return `unexpected argument ${/'([^']*)'/.exec(e.message ?? '')?.[1] ?? ''}`.trim();
  return (e.message ?? String(err)).split('. ')[0]!;
}

/**
 * The tool's options from the command line. `--help` prints the help and exits 0 before anything
 * else (no database is opened); wrong usage exits 2 with one line and the usage, never a stack trace.
 */
export function parseCli<O extends Record<string, CliOption>>(spec: CliSpec<O>, args = process.argv.slice(2)): CliValues<O> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(helpText(spec));
    process.exit(0);
  }
  const options = Object.fromEntries(
    Object.entries(spec.options).map(([name, o]) => [
      name,
      o.default !== undefined ? { type: o.type, default: o.default } : { type: o.type },
    ]),
  );
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args, options: options as never, strict: true, allowPositionals: false }).values;
  } catch (err) {
    usageError(spec, parseProblem(err));
  }
  for (const [name, o] of Object.entries(spec.options)) {
    if (o.required && (values[name] === undefined || values[name] === '')) usageError(spec, `--${name} is required`);
  }
  return values as CliValues<O>;
}

export async function openCliRuntime(): Promise<Runtime> {
  return createRuntime(parseEnv(process.env));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The workspace named by id or name (in any case: names are unique without regard to it), with its
 * first owner; exits with a message when there is none.
 */
export async function findWorkspace(db: Database, ref: string): Promise<{ id: string; name: string; ownerId: string }> {
  const byName = eq(sql`lower(${workspaces.name})`, ref.trim().toLowerCase());
  const match = UUID.test(ref) ? or(eq(workspaces.id, ref), byName) : byName;
  const [ws] = await db.select({ id: workspaces.id, name: workspaces.name }).from(workspaces).where(match).limit(1);
  if (!ws) fail(`No workspace with id or name ${JSON.stringify(ref)}.`);
  const [owner] = await db
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.workspaceId, ws.id), eq(memberships.role, 'owner')))
    .orderBy(asc(memberships.createdAt))
    .limit(1);
  if (!owner) fail(`Workspace ${ws.name} has no owner.`);
  return { ...ws, ownerId: owner.userId };
}

export function cliActor(tool: string, workspace: { id: string; ownerId: string }): Actor {
  return {
    type: 'system',
    id: `system:cli:${tool}`,
    ownerId: workspace.ownerId,
    workspaceId: workspace.id,
    trace: systemTrace(randomUUID()),
  };
}

export function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

/**
 * Runs a tool with the runtime open, closing it (and PGlite's directory lock) whatever happens.
 * Closing sends the NOTIFYs of the ledgers the tool's commits moved (server/ledger/wake.ts): a
 * running server's open leases hear of a key created or revoked here as of any other commit.
 */
export async function withRuntime(run: (runtime: Runtime) => Promise<number>): Promise<void> {
  let runtime: Runtime;
  try {
    runtime = await openCliRuntime();
  } catch (err) {
    fail((err as Error).message);
  }
  let code = 1;
  try {
    code = await run(runtime);
  } catch (err) {
    if (isClosedPipe(err)) code = 0;
    else console.error((err as Error).message);
  } finally {
    await runtime.close();
  }
  process.exit(code);
}
