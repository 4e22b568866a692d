/**
 * npm run ledger:export -- --workspace <name|id> [--from <sequence>] [--previous <bundle.json>] [--out <file> [--with-content]]
 * Writes a ledger bundle (server/ledger/bundle.ts): the workspace's events from `--from` on (all by
 * default), the head they end at, and the head of the earlier export named by --previous (then the
 * bundle starts right after that head unless --from says otherwise), with the signed checkpoint of
 * that head (server/ledger/bundle-export.ts). JSON to --out, or to stdout. With --with-content, the
 * stored bytes of the artifacts the bundle registers go beside it, into <out>.content/, one file per
 * digest (server/ledger/bundle-content.ts): made fresh beside it and renamed into place, so an
 * existing <out>.content/ is refused (exit 1, nothing written), never written into.
 * Anyone can check it with no database: npm run ledger:verify -- --bundle <file> [--previous <file>].
 */
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { bundleText, eventPages, type BundleHead } from '@/server/ledger/bundle';
import { signedBundleFrame } from '@/server/ledger/bundle-export';
import { readBundleFrame } from '@/server/ledger/bundle-file';
import { assertNoContentDir, contentDirOf, exportContents } from '@/server/ledger/bundle-content';
import { plural } from '@/server/words';
import { fail, findWorkspace, usageError } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'ledger:export',
  summary: 'writes a workspace’s ledger as a bundle anyone can check with no database (npm run ledger:verify -- --bundle).',
  usage: ['--workspace <name|id> [--from <sequence>] [--previous <bundle.json>] [--out <file> [--with-content]]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the workspace whose ledger to export', required: true },
    from: { type: 'string', value: '<sequence>', description: 'start at this event (default: the first, or right after --previous)' },
    previous: { type: 'string', value: '<bundle.json>', description: 'an earlier export this one follows: only the events since its head' },
    out: { type: 'string', value: '<file>', description: 'write the bundle here (default: standard output)' },
    'with-content': {
      type: 'boolean',
      description:
        'with --out: also write the stored bytes of the artifacts it registers into <file>.content/, each named by its SHA-256 (refused when <file>.content exists: remove it first)',
    },
  },
} as const;

/** The content folder there already ends the tool with its message (exit 1). */
async function refusingExisting<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    // By name: the tool may run inside the service, with its own copy of the class.
    if ((err as Error | null)?.name === 'ContentDirExists') fail((err as Error).message);
    throw err;
  }
}

export default dbTool({
  spec: cli,
  async prepare(values) {
    if (values.from !== undefined && !/^[1-9]\d*$/.test(values.from)) usageError(cli, '--from takes a sequence number (1 or more)');
    if (values['with-content'] && !values.out) usageError(cli, '--with-content goes with --out (the bytes are written beside the bundle)');
    let previous: BundleHead | null = null;
    if (values.previous) {
      // Only its head is needed: its events are not read into memory (the bundle may be long).
      let earlier: Awaited<ReturnType<typeof readBundleFrame>>;
      try {
        earlier = await readBundleFrame(values.previous);
      } catch (err) {
        fail(`Cannot read ${values.previous}: ${(err as Error).message}`);
      }
      if (earlier.problem) fail(`${values.previous} is not a ledger bundle (${earlier.problem}).`);
      previous = earlier.frame.head;
    }
    // Written by whichever process runs the export: named here, from where the tool was started.
    const outPath = values.out === undefined ? undefined : path.resolve(values.out);
    // Before the bundle is written: a refused export leaves nothing behind.
    if (outPath && values['with-content']) await refusingExisting(() => assertNoContentDir(outPath));
    return { ...values, previous, outPath };
  },
  async run({ db, env, secrets }, values, io) {
    const { previous } = values;
    const workspace = await findWorkspace(db, values.workspace!);
    // --from N starts the bundle at event N; after an earlier export, right after its head.
    const after = values.from !== undefined ? Number(values.from) - 1 : (previous?.sequence ?? 0);
    // Ends at the newest signed checkpoint, which it carries (the tree is signed up to the head first).
    const frame = await signedBundleFrame(db, workspace.id, { appUrl: env.APP_URL, secret: secrets.ledger }, { after, previous });
    // Written as it is read, a page of events at a time: memory stays flat however long the ledger.
    const text = Readable.from(bundleText(frame, eventPages(db, frame)), { highWaterMark: 1 });
    if (values.outPath) {
      await pipeline(text, createWriteStream(values.outPath));
      const count = frame.head.sequence - frame.from.sequence;
      const signed = frame.checkpoint
        ? ', with its signed checkpoint'
        : ', with no signed checkpoint (the tree is on alarm: see the service’s log)';
      io.error(
        `Wrote ${plural(count, 'event')} (${frame.from.sequence + 1}–${frame.head.sequence}) of ${workspace.name} to ${values.out}${signed}`,
      );
      if (values['with-content']) {
        const dir = contentDirOf(values.outPath);
        const { files, bytes } = await refusingExisting(() => exportContents(db, frame, dir));
        io.error(
          `Wrote the stored bytes of ${plural(files, 'artifact digest')} (${plural(bytes, 'byte')}) to ${contentDirOf(values.out!)}/`,
        );
      }
    } else await pipeline(text, io.stdout, { end: false });
    return 0;
  },
});
