/**
 * The stored bytes of a bundle's artifacts, beside the bundle: `ledger:export
 * --with-content` writes each into `<bundle>.content/<hex>`, named by its SHA-256, and `ledger:verify
 * --bundle` checks every file there: its bytes hash to its name, and that digest is one an
 * `artifact.registered` event of the bundle records. Content-addressed files need no index, and a
 * file can be checked with `sha256sum` alone; the bundle itself stays the events it always was.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { and, eq, gt, isNull, lte } from 'drizzle-orm';
import type { Executor } from '@/db';
import { artifactContents, artifacts, ledgerEvents } from '@/db/schema';
import { bundleEvents } from './bundle-file';
import type { BundleFrame } from './bundle-shape';
import { registeringEvent } from './registering-event';

/** Where a bundle's artifact bytes go: beside it. */
export const contentDirOf = (bundleFile: string) => `${bundleFile}.content`;

const HEX = /^[0-9a-f]{64}$/;

/**
 * Writes the stored bytes of the artifacts whose `artifact.registered` event the bundle holds (and
 * whose bytes are still stored) into `dir`, one file per digest. How many files and bytes.
 */
export async function exportContents(db: Executor, frame: BundleFrame, dir: string): Promise<{ files: number; bytes: number }> {
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
  await mkdir(dir, { recursive: true });
  let bytes = 0;
  for (const row of rows) {
    await writeFile(path.join(dir, row.sha256), row.content);
    bytes += row.content.length;
  }
  return { files: rows.length, bytes };
}

export interface ContentReport {
  dir: string;
  files: number;
  /** Files that do not check, each with why: the first problem of each. */
  problems: { file: string; problem: 'not_a_digest_name' | 'digest_mismatch' | 'not_registered' }[];
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
 * Checks every file of a bundle's content directory (null when it has none): its name is a digest,
 * its bytes hash to it, and the bundle registers it. Call it once the bundle itself has verified:
 * its events are then the ledger's, and so are the digests they record.
 */
export async function checkContents(bundleFile: string): Promise<ContentReport | null> {
  const dir = contentDirOf(bundleFile);
  const found = await stat(dir).catch(() => null);
  if (!found?.isDirectory()) return null;
  const registered = await registeredDigests(bundleFile);
  const report: ContentReport = { dir, files: 0, problems: [] };
  for (const name of (await readdir(dir)).sort()) {
    report.files++;
    if (!HEX.test(name)) {
      report.problems.push({ file: name, problem: 'not_a_digest_name' });
      continue;
    }
    const actual = createHash('sha256')
      .update(await readFile(path.join(dir, name)))
      .digest('hex');
    if (actual !== name) report.problems.push({ file: name, problem: 'digest_mismatch' });
    else if (!registered.has(name)) report.problems.push({ file: name, problem: 'not_registered' });
  }
  return report;
}
