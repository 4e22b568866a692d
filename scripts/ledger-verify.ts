/**
 * npm run ledger:verify -- --workspace <name|id>
 *   Recomputes the workspace's hash chain from the database and names the first broken link, the
 *   digests computed on every core (--workers; server/ledger/verify-parallel.ts).
 *   Then checks the chain against the newest signed checkpoint (server/ledger/signed.ts).
 * npm run ledger:verify -- --bundle <bundle.json> [--previous <earlier-bundle.json>] [--vkey <vkey>]
 *   Checks an exported bundle with no database (server/ledger/bundle.ts): its chain, its head, and
 *   that it extends the earlier export given with --previous. Without it, a bundle that names an
 *   earlier export is said to continue one that was not checked (continuesUncheckedExport). Its
 *   signed checkpoint is checked too (bundle-checkpoint.ts): with --vkey, against that key only.
 *   When <bundle>.content/ is beside it (ledger:export --with-content), every file there is checked
 *   too: a regular file (no link is followed) of at most 1 MiB, its bytes hash to its name, and the
 *   bundle registers that digest (bundle-content.ts).
 * Prints the report (JSON) and a line to read; with --json only the report goes to stdout, the
 * line to stderr, so that `| jq` reads the report.
 * Exit status 0 when everything verifies, 3 when it does not (scripts/cli.ts: 1 and 2).
 * On a terminal (or with --progress) a workspace's verification shows its progress on stderr:
 * events verified of the head's count, events a second, and the time left.
 */
import type { BundleReport } from '@/server/ledger/bundle';
import { verifyBundleFile } from '@/server/ledger/bundle-file';
import { checkContents } from '@/server/ledger/bundle-content';
import { parseVkey } from '@/server/ledger/note';
import { published, type VerifyReport } from '@/server/ledger/chain';
import { verifyWorkspaceParallel } from '@/server/ledger/verify-parallel';
import { plural } from '@/server/words';
import { fail, findWorkspace, ToolExit, usageError, type CliValues } from './cli';
import { dbTool, type ToolIO } from './db-tool';

/** The chain or bundle does not verify (0, 1 and 2 as for every tool: scripts/cli.ts). */
const BROKEN = 3;

const cli = {
  command: 'ledger:verify',
  summary: 'recomputes a hash chain, from the database or from an exported bundle, and names the first broken link.',
  usage: ['--workspace <name|id>', '--bundle <file> [--previous <earlier bundle>] [--vkey <vkey>]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'verify this workspace’s ledger in the database' },
    bundle: { type: 'string', value: '<file>', description: 'verify an exported bundle instead, with no database' },
    previous: { type: 'string', value: '<file>', description: 'with --bundle: the earlier export it must extend' },
    vkey: {
      type: 'string',
      value: '<vkey>',
      description: 'with --bundle: the verifier key its checkpoint must be signed with (GET /ledger/keys), not one the bundle lists',
    },
    workers: {
      type: 'string',
      value: '<n>',
      description: 'worker threads computing the digests (default: one per core)',
    },
    progress: {
      type: 'boolean',
      description: 'show progress on stderr (events/s, time left); the default when stderr is a terminal',
    },
    json: {
      type: 'boolean',
      description: 'only the JSON report on stdout (for jq); the line to read goes to stderr',
    },
  },
  notes: [
    `Exit status ${BROKEN}: the chain or bundle does not verify (the report says where), or an entry of <bundle>.content/ does not check: not a regular file (links are not followed), over 1 MiB, or not the bytes of a digest the bundle registers.`,
  ],
} as const;
type Values = CliValues<typeof cli.options>;

/** The options checked, and the number of workers as a number; wrong usage exits 2 here. */
function checked(values: Values) {
  if (!values.workspace === !values.bundle) usageError(cli, 'give --workspace or --bundle (one of them)');
  if (values.previous && !values.bundle) usageError(cli, '--previous goes with --bundle');
  if (values.vkey && !values.bundle) usageError(cli, '--vkey goes with --bundle');
  if (values.vkey) {
    try {
      parseVkey(values.vkey);
    } catch (err) {
      // A key that cannot be read is a mistake in the command, not a bundle that fails to verify.
      usageError(cli, `--vkey is not a verifier key: ${(err as Error).message}`);
    }
  }
  if (values.workers !== undefined && !/^[1-9][0-9]{0,2}$/.test(values.workers)) {
    usageError(cli, '--workers takes a whole number from 1 to 999');
  }
  return { ...values, workerCount: values.workers === undefined ? undefined : Number(values.workers) };
}

/** What a bundle's report says of the export it follows, for the line to read. */
function previousExport(report: VerifyReport | BundleReport): string {
  if (!('extendsPrevious' in report)) return '';
  if (report.extendsPrevious) return ', extending the earlier export';
  if (report.continuesUncheckedExport) {
    return ', continuing an earlier export that was not checked (give it with --previous to check that this one extends it)';
  }
  return '';
}

/** What the line says of the signed checkpoint checked. */
function signedPart(report: VerifyReport | BundleReport): string {
  const c = report.checkpoint;
  if (c === undefined) return '';
  if (c === null) return ', no signed checkpoint to check';
  const pinned = 'pinned' in c && c.pinned === false ? ' (a key the bundle lists: pin one with --vkey)' : '';
  return `, matching the checkpoint signed at tree size ${c.treeSize} by key ${c.keyId}${pinned}`;
}

/**
 * The report as GET /ledger/verify serves it (same fields), with what was checked; and a line to
 * read, after it on stdout, or on stderr with --json.
 */
function print(io: ToolIO, json: boolean, context: Record<string, unknown>, report: VerifyReport | BundleReport): number {
  io.log(JSON.stringify({ ...context, ...published(report) }, null, 2));
  const line = json ? io.error : io.log;
  if (report.verified) {
    line(
      `OK: ${plural(report.checkedEvents, 'event')} verified, head ${report.head.sequence} ${report.head.hash}${previousExport(report)}${signedPart(report)}`,
    );
    return 0;
  }
  line(`BROKEN at sequence ${report.firstBreak!.sequence}: ${report.firstBreak!.reason}`);
  return BROKEN;
}

/**
 * Progress as "verified 412,000 of 1,000,000 events (41 %), 95,300 events/s, about 6 s left". On a
 * terminal one line is rewritten in place; elsewhere (a log) a line at most every second, and the last.
 */
function progressLine(io: ToolIO, started: number): (checked: number, total: number) => void {
  const terminal = io.stderrIsTTY;
  let shown = 0;
  return (checked, total) => {
    const now = performance.now();
    const last = checked >= total;
    if (!terminal && !last && now - shown < 1000) return;
    shown = now;
    const perSecond = checked / Math.max((now - started) / 1000, 0.001);
    const left = Math.ceil((total - checked) / Math.max(perSecond, 1));
    const text =
      `verified ${checked.toLocaleString('en')} of ${total.toLocaleString('en')} events ` +
      `(${Math.floor((checked / Math.max(total, 1)) * 100)} %), ${Math.round(perSecond).toLocaleString('en')} events/s` +
      (last ? '' : `, about ${left} s left`);
    io.progress(terminal ? `\r\x1b[2K${text}${last ? '\n' : ''}` : `${text}\n`);
  };
}

/** An exported bundle, checked with no database; ends the tool with its verdict. */
async function verifyBundle(values: ReturnType<typeof checked>, io: ToolIO): Promise<never> {
  const bundle = values.bundle!;
  // Streamed, checked on every core, in flat memory however long the bundle (server/ledger/bundle-file.ts).
  const started = performance.now();
  let report: BundleReport;
  try {
    report = await verifyBundleFile(bundle, {
      previous: values.previous,
      vkey: values.vkey,
      workers: values.workerCount,
      onProgress: values.progress || io.stderrIsTTY ? progressLine(io, started) : undefined,
    });
  } catch (err) {
    fail(`Cannot read ${(err as Error & { file?: string }).file ?? bundle}: ${(err as Error).message}`);
  }
  // The artifacts' bytes beside it, once its events are known to be the ledger's.
  const content = report.verified ? await checkContents(bundle) : null;
  const seconds = Number(((performance.now() - started) / 1000).toFixed(3));
  const status = print(io, Boolean(values.json), { bundle, seconds, ...(content ? { content } : {}) }, report);
  if (status !== 0 || !content) throw new ToolExit(status);
  const line = values.json ? io.error : io.log;
  if (content.problems.length > 0) {
    const first = content.problems[0]!;
    line(
      `BROKEN content: ${plural(content.problems.length, 'file')} of ${content.dir} do not check; first ${first.file}: ${first.problem}`,
    );
    throw new ToolExit(BROKEN);
  }
  line(`OK: ${plural(content.files, 'artifact file')} in ${content.dir} match digests the bundle registers`);
  throw new ToolExit(0);
}

export default dbTool({
  spec: cli,
  async prepare(values, io) {
    const options = checked(values);
    // A bundle needs no database: it is checked here, whether or not a service runs.
    if (options.bundle) await verifyBundle(options, io);
    return options;
  },
  async run(runtime, values, io) {
    const workspace = await findWorkspace(runtime.db, values.workspace!);
    const started = performance.now();
    const report = await verifyWorkspaceParallel(runtime, workspace.id, {
      workers: values.workerCount,
      onProgress: values.progress || io.stderrIsTTY ? progressLine(io, started) : undefined,
    });
    const seconds = Number(((performance.now() - started) / 1000).toFixed(3));
    return print(io, Boolean(values.json), { workspace: workspace.name, workspaceId: workspace.id, seconds }, report);
  },
});
