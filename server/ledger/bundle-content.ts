/**
 * The stored bytes of a bundle's artifacts, beside the bundle: `ledger:export
 * --with-content` writes each into `<bundle>.content/<hex>`, named by its SHA-256, and `ledger:verify
 * --bundle` checks every file there: its bytes hash to its name, and that digest is one an
 * `artifact.registered` event of the bundle records. Content-addressed files need no index, and a
 * file can be checked with `sha256sum` alone; the bundle itself stays the events it always was.
 *
 * Neither side trusts the folder. A hand-made one may hold links (to /dev/zero, or to a file
 * elsewhere), FIFOs, folders or huge files: the checker looks at each entry with lstat, never
 * follows a link, reads only regular files of at most the stored limit, and hashes them as a
 * stream. The export never writes into a folder it did not just make: the files go into a fresh
 * folder beside the target, each opened with O_EXCL | O_NOFOLLOW, and that folder is renamed into
 * place; an existing `.content` folder is refused, not written into.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { and, eq, gt, isNull, lte } from 'drizzle-orm';
import type { Executor } from '@/db';
import { artifactContents, artifacts, ledgerEvents, MAX_STORED_BYTES } from '@/db/schema';
import { bundleEvents } from './bundle-file';
import type { BundleFrame } from './bundle-shape';
import { registeringEvent } from './registering-event';

/** Where a bundle's artifact bytes go: beside it. */
export const contentDirOf = (bundleFile: string) => `${bundleFile}.content`;

const HEX = /^[0-9a-f]{64}$/;

/** Why an export refuses to write its content folder: it is there already. */
class ContentDirExists extends Error {
  override readonly name = 'ContentDirExists';
  constructor(readonly dir: string) {
    super(`${dir} already exists: remove it, or export to another --out (the export never writes into a folder it did not make)`);
  }
}

/** Anything at `file`, link or not (lstat: a dangling link counts). */
const exists = (file: string) =>
  lstat(file).then(
    () => true,
    () => false,
  );

/** Refuses early, before anything is written, when the content folder of `bundleFile` is there already. */
export async function assertNoContentDir(bundleFile: string): Promise<void> {
  const dir = contentDirOf(bundleFile);
  if (await exists(dir)) throw new ContentDirExists(dir);
}

/**
 * Writes the stored bytes of the artifacts whose `artifact.registered` event the bundle holds (and
 * whose bytes are still stored) into a new folder `dir`, one file per digest. How many files and
 * bytes. Throws ContentDirExists when `dir` is there already (a folder, a file or a link).
 */
export async function exportContents(db: Executor, frame: BundleFrame, dir: string): Promise<{ files: number; bytes: number }> {
  if (await exists(dir)) throw new ContentDirExists(dir);
  const rows = await db
    .selectDistinct({ sha256: artifactContents.sha256, content: artifactContents.content })
    .from(artifacts)
    .innerJoin(ledgerEvents, registeringEvent)
    .innerJoin(
      artifactContents,
      and(eq(artifactContents.workspaceId, artifacts.workspaceId), eq(artifactContents.sha256, artifacts.sha256)),
    )
    .where(
      and(
        eq(artifacts.workspaceId, frame.workspaceId),
        isNull(artifacts.contentRemovedAt),
        gt(ledgerEvents.sequence, frame.from.sequence),
        lte(ledgerEvents.sequence, frame.head.sequence),
      ),
    );
  // A name nobody could have planted anything under: mkdir fails if anything is there.
  const fresh = path.join(path.dirname(dir), `.${path.basename(dir)}.${randomBytes(8).toString('hex')}.tmp`);
  await mkdir(fresh);
  try {
    let bytes = 0;
    for (const row of rows) {
      const file = await open(
        path.join(fresh, row.sha256),
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o644,
      );
      try {
        await file.writeFile(row.content);
      } finally {
        await file.close();
      }
      bytes += row.content.length;
    }
    // rename() replaces neither a folder with entries nor a link: what appeared meanwhile is kept.
    await rename(fresh, dir).catch((err: NodeJS.ErrnoException) => {
      throw ['EEXIST', 'ENOTEMPTY', 'ENOTDIR', 'EISDIR'].includes(err.code ?? '') ? new ContentDirExists(dir) : err;
    });
    return { files: rows.length, bytes };
  } catch (err) {
    await rm(fresh, { recursive: true, force: true });
    throw err;
  }
}

type ContentProblem = 'not_a_directory' | 'not_a_digest_name' | 'not_a_regular_file' | 'too_large' | 'digest_mismatch' | 'not_registered';

export interface ContentReport {
  dir: string;
  files: number;
  /** Files that do not check, each with why: the first problem of each. */
  problems: { file: string; problem: ContentProblem }[];
}

/** The digests (hex) the bundle's `artifact.registered` events record. */
async function registeredDigests(bundleFile: string): Promise<Set<string>> {
  const digests = new Set<string>();
  for await (const page of bundleEvents(bundleFile)) {
    for (const event of page) {
      if (event.eventType !== 'artifact.registered') continue;
      const digest = (event.payload as { digest?: unknown } | null)?.digest;
      if (typeof digest === 'string' && digest.startsWith('sha256:')) digests.add(digest.slice('sha256:'.length));
    }
  }
  return digests;
}

/**
 * The SHA-256 (hex) of a regular file of at most MAX_STORED_BYTES, read as a stream; or the problem
 * that stops it being read. Opened without following a link and without waiting on a FIFO, then
 * checked again on the open file: an entry swapped after its lstat is caught too.
 */
async function hashFile(file: string): Promise<string | 'not_a_regular_file' | 'too_large'> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ELOOP' || err.code === 'EISDIR' || err.code === 'ENXIO') return null;
    throw err;
  });
  if (!handle) return 'not_a_regular_file';
  try {
    const found = await handle.stat();
    if (!found.isFile()) return 'not_a_regular_file';
    if (found.size > MAX_STORED_BYTES) return 'too_large';
    const hash = createHash('sha256');
    const buffer = Buffer.alloc(64 * 1024);
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      // A file growing while it is read stops here, never past the limit.
      if (total > MAX_STORED_BYTES) return 'too_large';
      hash.update(buffer.subarray(0, bytesRead));
    }
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}

/**
 * Checks every entry of a bundle's content directory (null when it has none): a regular file (not a
 * link, FIFO, folder or device), at most MAX_STORED_BYTES, named by a digest, whose bytes hash to
 * it, and which the bundle registers. Call it once the bundle itself has verified: its events are
 * then the ledger's, and so are the digests they record.
 */
export async function checkContents(bundleFile: string): Promise<ContentReport | null> {
  const dir = contentDirOf(bundleFile);
  const found = await lstat(dir).catch(() => null);
  if (!found) return null;
  // A link or a file where the folder should be is not followed: it is a problem, not "no content".
  if (!found.isDirectory()) return { dir, files: 0, problems: [{ file: path.basename(dir), problem: 'not_a_directory' }] };
  const registered = await registeredDigests(bundleFile);
  const report: ContentReport = { dir, files: 0, problems: [] };
  for (const name of (await readdir(dir)).sort()) {
    report.files++;
    const problem = await checkEntry(path.join(dir, name), name, registered);
    if (problem) report.problems.push({ file: name, problem });
  }
  return report;
}

/** The first problem of one entry of the content folder, or null when it checks. */
async function checkEntry(file: string, name: string, registered: Set<string>): Promise<ContentProblem | null> {
  if (!HEX.test(name)) return 'not_a_digest_name';
  // lstat first: its size and kind, without opening (a FIFO would block) or reading anything.
  const entry = await lstat(file);
  if (!entry.isFile()) return 'not_a_regular_file';
  if (entry.size > MAX_STORED_BYTES) return 'too_large';
  const actual = await hashFile(file);
  if (actual === 'not_a_regular_file' || actual === 'too_large') return actual;
  if (actual !== name) return 'digest_mismatch';
  return registered.has(name) ? null : 'not_registered';
}
