/**
 * Ledger bundles: a workspace's events exported with the head they lead to, so that anyone can
 * check them with no database and no access to the service (`npm run ledger:export`, then
 * `npm run ledger:verify -- --bundle <file>`; README, "Offline proof").
 *
 * A bundle holds the events from some sequence on, the position of the chain just before them
 * (`from`: sequence 0 and the genesis hash for a whole chain), the head they end at, and the head
 * of the export it follows (`previous`). Checking one is ChainVerifier over its events from `from`,
 * then the head; checking that it extends an earlier bundle is finding that bundle's head on its
 * chain: either as its `from`, or as one of its events. A later export that passes both cannot have
 * rewritten anything the earlier one showed, because every event's hash covers the one before it.
 */
import { z } from 'zod';
import type { Executor } from '@/db';
import { GENESIS_HASH } from '@/db/schema';
import type { LedgerEvent } from './canonical';
import { readEvents, readHead } from './read';
import { ChainVerifier, type ChainBreak, type VerifyReport } from './chain';

export const BUNDLE_FORMAT = 'aws-ledger-bundle/1';

const head = z.object({ sequence: z.number().int().nonnegative(), headHash: z.string() }).strict();
const event = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    sequence: z.number().int().positive(),
    ownerId: z.string(),
    aggregateType: z.string(),
    aggregateId: z.string(),
    aggregateVersion: z.number().int(),
    eventType: z.string(),
    schemaVersion: z.number().int(),
    actorType: z.string(),
    actorId: z.string(),
    // Passed through as parsed: a schema that rebuilt it could drop a "__proto__" key and change
    // what is hashed.
    payload: z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), 'an object'),
    payloadDigest: z.string(),
    occurredAtCanonical: z.string(),
    idempotencyKey: z.string().nullable(),
    causationId: z.string(),
    correlationId: z.string(),
    contextManifestDigest: z.string(),
    previousHash: z.string(),
    eventHash: z.string(),
  })
  .strict();

export const ledgerBundleSchema = z
  .object({
    format: z.literal(BUNDLE_FORMAT),
    workspaceId: z.string(),
    exportedAt: z.string(),
    from: z.object({ sequence: z.number().int().nonnegative(), hash: z.string() }).strict(),
    events: z.array(event),
    head,
    previous: head.nullable(),
  })
  .strict();

export type LedgerBundle = z.infer<typeof ledgerBundleSchema>;
type Head = z.infer<typeof head>;

/**
 * The bundle of `workspaceId`'s events after sequence `after` (0: the whole chain), up to the head
 * as read first. `previous` is the head of the export this one follows, recorded so the two can be
 * checked together later. Reads in pages of `pageSize`.
 */
export async function exportBundle(
  db: Executor,
  workspaceId: string,
  opts: { after?: number; previous?: Head | null; pageSize?: number } = {},
): Promise<LedgerBundle> {
  const at = (await readHead(db, workspaceId)) ?? { sequence: 0, headHash: GENESIS_HASH };
  const after = Math.min(opts.after ?? 0, at.sequence);
  let from = { sequence: 0, hash: GENESIS_HASH };
  if (after > 0) {
    const [before] = await readEvents(db, workspaceId, { after: after - 1, limit: 1 });
    if (!before || before.sequence !== after) throw new Error(`no event at sequence ${after} in workspace ${workspaceId}`);
    from = { sequence: after, hash: before.eventHash };
  }
  const events: LedgerEvent[] = [];
  const pageSize = opts.pageSize ?? 2000;
  for (let last = after; last < at.sequence;) {
    const page = await readEvents(db, workspaceId, { after: last, limit: Math.min(pageSize, at.sequence - last) });
    if (page.length === 0) break;
    events.push(...page);
    last = page[page.length - 1]!.sequence;
  }
  return {
    format: BUNDLE_FORMAT,
    workspaceId,
    exportedAt: new Date().toISOString(),
    from,
    events,
    head: { sequence: at.sequence, headHash: at.headHash },
    previous: opts.previous ?? null,
  };
}

/** The bundle as a file: what npm run ledger:export writes and the web interface downloads. */
export function bundleText(bundle: LedgerBundle): string {
  return JSON.stringify(bundle, null, 2) + '\n';
}

type BundleBreakReason = ChainBreak['reason'] | 'not_a_bundle' | 'other_workspace' | 'does_not_extend';

export interface BundleReport extends Omit<VerifyReport, 'firstBreak'> {
  firstBreak: (Omit<ChainBreak, 'reason'> & { reason: BundleBreakReason }) | null;
  /** Whether the bundle was shown to extend the earlier one (null: no earlier one to check against). */
  extendsPrevious: boolean | null;
}

/**
 * Checks a bundle on its own, and, given the earlier bundle it claims to follow, that it extends it.
 * `bundle` and `earlier` are parsed JSON of unknown shape: anything that is not a bundle is
 * reported as `not_a_bundle`, never thrown.
 */
export function verifyBundle(bundle: unknown, earlier?: unknown): BundleReport {
  const parsed = ledgerBundleSchema.safeParse(bundle);
  if (!parsed.success) return refused('not_a_bundle', 'a ledger bundle (' + BUNDLE_FORMAT + ')', parsed.error.issues[0]?.message ?? '');
  const b = parsed.data;
  const verifier = new ChainVerifier(b.from);
  // Any string is hashed as it is: a bundle is judged by its hashes, not by what the service writes.
  for (const e of b.events) if (!verifier.push(e as LedgerEvent)) break;
  const report: BundleReport = { ...verifier.finish(b.head), extendsPrevious: null };
  if (!report.ok) return report;
  for (const e of b.events) {
    if (e.workspaceId !== b.workspaceId) return broken(report, e.sequence, 'other_workspace', b.workspaceId, e.workspaceId);
  }

  // The head this bundle says it follows must lie on its chain; given the earlier bundle itself,
  // that bundle must verify, belong to the same workspace, and end at that head.
  let previous = b.previous;
  if (earlier !== undefined) {
    const before = verifyBundle(earlier);
    if (!before.ok)
      return broken(report, before.firstBreak?.sequence ?? 0, 'does_not_extend', 'an earlier bundle that verifies', 'one that does not');
    const e = ledgerBundleSchema.parse(earlier);
    if (e.workspaceId !== b.workspaceId) return broken(report, 0, 'other_workspace', e.workspaceId, b.workspaceId);
    if (previous && (previous.sequence !== e.head.sequence || previous.headHash !== e.head.headHash)) {
      return broken(
        report,
        previous.sequence,
        'does_not_extend',
        `${e.head.sequence} ${e.head.headHash}`,
        `${previous.sequence} ${previous.headHash}`,
      );
    }
    previous = e.head;
  }
  if (!previous) return report;
  const found = hashAt(b, previous.sequence);
  if (found === undefined) {
    return broken(
      report,
      previous.sequence,
      'does_not_extend',
      `the chain through sequence ${previous.sequence}`,
      `a bundle from sequence ${b.from.sequence + 1} to ${b.head.sequence}`,
    );
  }
  if (found !== previous.headHash) return broken(report, previous.sequence, 'does_not_extend', previous.headHash, found);
  return { ...report, extendsPrevious: true };
}

/** The hash the bundle's chain has at `sequence`, or undefined when the bundle does not cover it. */
function hashAt(b: LedgerBundle, sequence: number): string | undefined {
  if (sequence === b.from.sequence) return b.from.hash;
  return b.events.find((e) => e.sequence === sequence)?.eventHash;
}

function broken(report: BundleReport, sequence: number, reason: BundleBreakReason, expected: string, actual: string): BundleReport {
  return { ...report, ok: false, extendsPrevious: false, firstBreak: { sequence, eventId: null, reason, expected, actual } };
}

function refused(reason: BundleBreakReason, expected: string, actual: string): BundleReport {
  return {
    ok: false,
    checkedEvents: 0,
    lastVerified: { sequence: 0, hash: GENESIS_HASH },
    head: { sequence: 0, hash: GENESIS_HASH },
    extendsPrevious: null,
    firstBreak: { sequence: 0, eventId: null, reason, expected, actual },
  };
}
