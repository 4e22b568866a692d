/**
 * npm run ledger:export -- --workspace <name|id> [--from <sequence>] [--previous <bundle.json>] [--out <file>]
 * Writes a ledger bundle (server/ledger/bundle.ts): the workspace's events from `--from` on (all by
 * default), the head they end at, and the head of the earlier export named by --previous (then the
 * bundle starts right after that head unless --from says otherwise). JSON to --out, or to stdout.
 * Anyone can check it with no database: npm run ledger:verify -- --bundle <file> [--previous <file>].
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { bundleText, exportBundle, ledgerBundleSchema } from '@/server/ledger/bundle';
import { fail, findWorkspace, parseCli, usageError, withRuntime } from './cli';

const cli = {
  command: 'ledger:export',
  summary: 'writes a workspace’s ledger as a bundle anyone can check with no database (npm run ledger:verify -- --bundle).',
  usage: ['--workspace <name|id> [--from <sequence>] [--previous <bundle.json>] [--out <file>]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the workspace whose ledger to export', required: true },
    from: { type: 'string', value: '<sequence>', description: 'start at this event (default: the first, or right after --previous)' },
    previous: { type: 'string', value: '<bundle.json>', description: 'an earlier export this one follows: only the events since its head' },
    out: { type: 'string', value: '<file>', description: 'write the bundle here (default: standard output)' },
  },
} as const;
const values = parseCli(cli);
if (values.from !== undefined && !/^[1-9]\d*$/.test(values.from)) usageError(cli, '--from takes a sequence number (1 or more)');

let previous: { sequence: number; headHash: string } | null = null;
if (values.previous) {
  let earlier: unknown;
  try {
    earlier = JSON.parse(readFileSync(values.previous, 'utf8'));
  } catch (err) {
    fail(`Cannot read ${values.previous}: ${(err as Error).message}`);
  }
  const parsed = ledgerBundleSchema.safeParse(earlier);
  if (!parsed.success) fail(`${values.previous} is not a ledger bundle.`);
  previous = parsed.data.head;
}

await withRuntime(async ({ db }) => {
  const workspace = await findWorkspace(db, values.workspace!);
  // --from N starts the bundle at event N; after an earlier export, right after its head.
  const after = values.from !== undefined ? Number(values.from) - 1 : (previous?.sequence ?? 0);
  const bundle = await exportBundle(db, workspace.id, { after, previous });
  const text = bundleText(bundle);
  if (values.out) {
    writeFileSync(values.out, text);
    console.error(
      `Wrote ${bundle.events.length} events (${bundle.from.sequence + 1}–${bundle.head.sequence}) of ${workspace.name} to ${values.out}`,
    );
  } else process.stdout.write(text);
  return 0;
});
