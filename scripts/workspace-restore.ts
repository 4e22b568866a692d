/**
 * npm run workspace:restore -- --bundle <file> [--previous <earlier bundle>] [--workers <n>]
 * Rebuilds a workspace on this service's database (DATABASE_URL, or PGlite's directory) from its
 * exported ledger bundle (npm run ledger:export): first the bundle is verified, as ledger:verify
 * --bundle does; then its events are written exactly as they are (same ids, sequences and hashes)
 * and every table that follows from them is rebuilt, in one transaction
 * (server/domain/workspaces/restore.ts). It says what could not come back: passwords, API keys,
 * pending invitations and webhook endpoints (their secrets are never in the ledger).
 *
 * A bundle exported with --previous holds only the events since the earlier export: give that
 * earlier one (which must start at the first event) as --previous, and the events before the
 * bundle's come from it.
 */
import { bundleEvents, readBundleFrame, verifyBundleFile } from '@/server/ledger/bundle-file';
import type { BundleFrame } from '@/server/ledger/bundle';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { NotTheChain, restoreWorkspace, WorkspaceExists, type RestoreReport } from '@/server/domain/workspaces/restore';
import path from 'node:path';
import { plural } from '@/server/words';
import { fail, ToolExit, usageError, type CliValues } from './cli';
import { dbTool, type ToolIO } from './db-tool';

/** The bundle does not verify: nothing was written (0, 1 and 2 as for every tool: scripts/cli.ts). */
const BROKEN = 3;

const cli = {
  command: 'workspace:restore',
  summary: 'rebuilds a workspace on this database from its exported ledger bundle, after verifying it.',
  usage: ['--bundle <file> [--previous <earlier bundle>]'],
  options: {
    bundle: { type: 'string', value: '<file>', description: 'the bundle to restore from (npm run ledger:export)', required: true },
    previous: {
      type: 'string',
      value: '<file>',
      description: 'the earlier export the bundle follows, from the first event (for a bundle exported with --previous)',
    },
    workers: { type: 'string', value: '<n>', description: 'worker threads verifying the bundle (default: one per core)' },
  },
  notes: [
    `Exit status ${BROKEN}: the bundle does not verify; nothing was written.`,
    'The workspace must not be on the database yet. Members come back without passwords, API keys revoked.',
  ],
} as const;

async function frameOf(file: string): Promise<BundleFrame> {
  let read: Awaited<ReturnType<typeof readBundleFrame>>;
  try {
    read = await readBundleFrame(file);
  } catch (err) {
    fail(`Cannot read ${file}: ${(err as Error).message}`);
  }
  if (read.problem) fail(`${file} is not a ledger bundle (${read.problem}).`);
  return read.frame;
}

/** The events of `pages` up to sequence `last`. */
async function* upTo(pages: AsyncIterable<LedgerEvent[]>, last: number): AsyncGenerator<LedgerEvent[]> {
  for await (const page of pages) {
    const kept = page.filter((e) => e.sequence <= last);
    if (kept.length > 0) yield kept;
    if (page.length === 0 || page[page.length - 1]!.sequence >= last) return;
  }
}

/** The whole chain: the earlier export's events before the bundle's first, then the bundle's. */
async function* chain(frame: BundleFrame, files: { bundle: string; previous?: string }): AsyncGenerator<LedgerEvent[]> {
  if (frame.from.sequence > 0) yield* upTo(bundleEvents(files.previous!), frame.from.sequence);
  yield* bundleEvents(files.bundle);
}

/** 1. Verified first, on every core, in flat memory (server/ledger/bundle-file.ts), in the tool's own process. */
async function verified(values: CliValues<typeof cli.options>, io: ToolIO) {
  if (values.workers !== undefined && !/^[1-9][0-9]{0,2}$/.test(values.workers)) {
    usageError(cli, '--workers takes a whole number from 1 to 999');
  }
  const frame = await frameOf(values.bundle!);
  const earlier = values.previous ? await frameOf(values.previous) : null;
  if (frame.from.sequence > 0 && !earlier) {
    fail(
      `${values.bundle} starts after event ${frame.from.sequence}: give the earlier export it follows, ` +
        'from the first event, with --previous.',
    );
  }
  if (frame.from.sequence > 0 && earlier!.from.sequence > 0) {
    fail(`${values.previous} starts after event ${earlier!.from.sequence}: a restore needs the chain from its first event.`);
  }
  let bundle;
  try {
    bundle = await verifyBundleFile(values.bundle!, {
      previous: values.previous,
      workers: values.workers === undefined ? undefined : Number(values.workers),
    });
  } catch (err) {
    fail(`Cannot read ${(err as Error & { file?: string }).file ?? values.bundle}: ${(err as Error).message}`);
  }
  if (!bundle.verified) {
    const b = bundle.firstBreak!;
    throw new ToolExit(
      BROKEN,
      `The bundle does not verify: broken at sequence ${b.sequence} (${b.reason}; expected ${b.expected}, found ${b.actual}). Nothing was written.`,
    );
  }
  io.log(`Verified: ${plural(bundle.checkedEvents, 'event')}, head ${frame.head.sequence} ${frame.head.headHash}.`);
  // Read again by whichever process writes the workspace: named here, from where the tool was started.
  return { frame, files: { bundle: path.resolve(values.bundle!), previous: values.previous && path.resolve(values.previous) } };
}

/** What each rebuilt table holds, in words (one, many). */
const PROJECTION_NOUNS: Record<keyof RestoreReport['projections'], [string, string]> = {
  initiatives: ['initiative', 'initiatives'],
  workstreams: ['workstream', 'workstreams'],
  milestones: ['milestone', 'milestones'],
  tasks: ['task', 'tasks'],
  receipts: ['receipt', 'receipts'],
  runs: ['run', 'runs'],
  checkpoints: ['checkpoint', 'checkpoints'],
  claims: ['dedup claim', 'dedup claims'],
  imported: ['imported receipt', 'imported receipts'],
  decisions: ['decision', 'decisions'],
  attention: ['attention request', 'attention requests'],
};
const have = (n: number, noun: string) => `${plural(n, noun)} ${n === 1 ? 'has' : 'have'}`;
const comes = (n: number, noun: string) => `${plural(n, noun)} ${n === 1 ? 'comes' : 'come'}`;

export default dbTool({
  spec: cli,
  prepare: verified,
  // 2. Written in one transaction: a restore that fails leaves nothing.
  async run({ db }, { frame, files }, io) {
    let report: RestoreReport;
    try {
      report = await restoreWorkspace(db, frame, chain(frame, files));
    } catch (err) {
      if (err instanceof WorkspaceExists || err instanceof NotTheChain) fail(`Cannot restore: ${err.message} Nothing was written.`);
      throw err;
    }
    summarize(report, io.log);
    return 0;
  },
});

function summarize(r: RestoreReport, log: (line: string) => void): void {
  const rows = Object.entries(r.projections)
    .filter(([, n]) => n > 0)
    .map(([table, n]) => {
      const [one, many] = PROJECTION_NOUNS[table as keyof RestoreReport['projections']] ?? [table, table];
      return plural(n, one, many);
    })
    .join(', ');
  log(`Restored workspace ${r.name} (${r.workspaceId}): ${plural(r.events, 'event')}, head ${r.head.sequence} ${r.head.headHash}.`);
  log(`Rebuilt from the ledger: ${rows || 'no work yet'}.`);
  log('');
  log('What the ledger does not hold (its secrets) did not come back:');
  if (r.membersWithoutPassword.length > 0) {
    log(`- ${have(r.membersWithoutPassword.length, 'member')} no password yet; give each one with`);
    for (const email of r.membersWithoutPassword) log(`    npm run user:reset-password -- --email ${email}`);
  }
  if (r.membersKept.length > 0)
    log(`- ${plural(r.membersKept.length, 'member')} had an account here already and keep it: ${r.membersKept.join(', ')}`);
  if (r.revokedKeys.length > 0) {
    log(`- ${comes(r.revokedKeys.length, 'API key')} back revoked: ${r.revokedKeys.map((k) => `${k.prefix}… (${k.name})`).join(', ')}`);
    log(`    new ones: npm run key:create -- --workspace ${JSON.stringify(r.name)} --name <name>`);
  }
  if (r.revokedInvitations.length > 0) {
    log(`- ${comes(r.revokedInvitations.length, 'pending invitation')} back revoked (invite again): ${r.revokedInvitations.join(', ')}`);
  }
  if (r.webhookEndpoints.length > 0) {
    log(
      `- ${plural(r.webhookEndpoints.length, 'webhook endpoint')} ${r.webhookEndpoints.length === 1 ? 'was' : 'were'} not restored (create them again): ${r.webhookEndpoints.join(', ')}`,
    );
  }
}
