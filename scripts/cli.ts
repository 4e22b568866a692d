/**
 * Shared pieces of the command-line tools: their options and help, the runtime from the
 * environment, and finding a workspace.
 *
 * Exit status, for every tool: 0 done, 1 it could not be done (no such workspace, no database),
 * 2 wrong usage (an unknown option, a missing or bad value: one line saying which, then the usage).
 * ledger:verify adds 3: the chain or bundle does not verify.
 *
 * API keys never go on the command line, where shell history, `ps` and npm's echo of the command
 * show them: a tool that takes one reads it from AWS_API_KEY or from the file --key-file names, and
 * refuses `--key` with one line saying so.
 *
 * The tools that open the database run as scripts/db-tool.ts says (directly, or through the
 * running service that holds the embedded database).
 */
import { readFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { and, asc, eq, or, sql } from 'drizzle-orm';
import type { Database } from '@/db';
import { memberships, workspaces } from '@/db/schema';
import { systemTrace, type Actor } from '@/server/domain/actor';

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

export type CliValues<O extends Record<string, CliOption>> = {
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
  // Refused before anything else, so the key is not echoed back in an "unknown option" line either.
  if ('key-file' in spec.options && args.some((a) => a === '--key' || a.startsWith('--key='))) {
    usageError(spec, KEY_ON_COMMAND_LINE);
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

const KEY_ON_COMMAND_LINE =
  '--key would show the key in shell history, ps and npm’s echo of the command: set AWS_API_KEY, or give --key-file <path>';

/**
 * The API key from --key-file (a file holding the key; `-` reads it from standard input), else
 * from AWS_API_KEY; wrong usage when neither is given (`fromEnv: false`: only --key-file counts).
 */
export async function readApiKey(
  spec: CliSpec<Record<string, CliOption>>,
  file: string | undefined,
  opts: { fromEnv?: boolean } = {},
): Promise<string> {
  if (file === undefined) {
    const key = opts.fromEnv === false ? undefined : process.env.AWS_API_KEY?.trim();
    if (key) return key;
    usageError(
      spec,
      opts.fromEnv === false ? 'give --key-file <path>' : 'set AWS_API_KEY to an API key of the workspace, or give --key-file <path>',
    );
  }
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  } catch (err) {
    fail(`Cannot read the key from ${file}: ${(err as Error).message}`);
  }
  const key = text.trim();
  if (!key || /\s/.test(key)) fail(`${file === '-' ? 'Standard input' : file} does not hold one API key (awk_…) alone.`);
  return key;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
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

/**
 * Ends a tool's run with `code`, and `message` (if any) on stderr. Thrown, not process.exit, so that
 * a run in the service's process (scripts/tool-service.ts) ends its own run, not the service; the
 * driver (scripts/tool.mjs, scripts/db-tool.ts) prints it and exits with the code.
 */
export class ToolExit extends Error {
  override readonly name = 'ToolExit';
  constructor(
    readonly exitCode: number,
    message = '',
  ) {
    super(message);
  }
}

/** The tool cannot do it: `message` on stderr, exit 1. */
export function fail(message: string): never {
  throw new ToolExit(1, message);
}
