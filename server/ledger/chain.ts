/**
 * The chain verifier: every payloadDigest and eventHash recomputed from the event's own fields,
 * every previousHash checked against the event before it, sequences 1, 2, 3 … without gaps, and
 * the head. Pure: it is fed from the database (verify.ts), by worker threads over batches
 * (verify-parallel.ts), from exported bundles (bundle.ts) and from live streams.
 */
import { GENESIS_HASH } from '@/db/schema/genesis';
import { canonicalJson, ledgerEventCanonicalText, sha256Hex, type LedgerEvent } from './canonical';
import { canonicalTextOfRow, payloadTextOfRow, type EventTextRow } from './event-rows';
import { eventLeafHash } from './merkle';

/**
 * Why a chain does not verify. The first five are the chain's own links; the `checkpoint_` ones
 * compare it with the newest checkpoint the log signed (signed.ts): its signature does not verify,
 * the chain is shorter than the size it signed, or the Merkle root of the chain's events at that
 * size is not the root it signed.
 */
export const BREAK_REASONS = [
  'sequence_gap',
  'payload_digest_mismatch',
  'event_hash_mismatch',
  'previous_hash_mismatch',
  'head_mismatch',
  'checkpoint_signature_invalid',
  'checkpoint_beyond_head',
  'checkpoint_root_mismatch',
] as const;
type BreakReason = (typeof BREAK_REASONS)[number];

export interface ChainBreak {
  sequence: number;
  eventId: string | null;
  reason: BreakReason;
  expected: string;
  actual: string;
}

/** A place on a chain: an event's sequence and eventHash (sequence 0 and the genesis hash before the first). */
export interface ChainPosition {
  sequence: number;
  hash: string;
}

/**
 * What a verification found, in the same words wherever it is shown: GET /ledger/verify serves it,
 * and npm run ledger:verify prints it (for a workspace or a bundle).
 */
export interface VerifyReport {
  /** The whole chain checked holds (every digest and link, and the recorded head). */
  verified: boolean;
  checkedEvents: number;
  /** The last event of the intact part of the chain. */
  lastVerified: ChainPosition;
  /** The head as recorded (ledger_heads, or the bundle's); the genesis position when there is none. */
  head: ChainPosition;
  firstBreak: ChainBreak | null;
  /**
   * The signed checkpoint the chain was checked against (the newest), and whether the chain holds
   * it (null when a break before its size left it unjudged). Null when there was none to check;
   * absent where none is looked for (a bundle's chain without its checkpoint).
   */
  checkpoint?: CheckpointCheck | null;
}

/** What a verification says of the signed checkpoint it checked the chain against. */
export interface CheckpointCheck {
  treeSize: number;
  /** The signed root, standard base64 as in the note. */
  rootHash: string;
  keyId: string;
  holds: boolean | null;
}

/** Where a verifier puts the leaf hashes of the events it verified, up to a tree size (the signed checkpoint's). */
export interface LeafSink {
  upTo: number;
  add(leaf: Buffer): void;
}

/**
 * A report as it is published (GET /ledger/verify, npm run ledger:verify): with `ok` beside
 * `verified`, the same value. The report called it `ok` before `ok` was kept for "the request was
 * carried out" (docs/contract.md §10.7); clients that read `ok` keep working until API version 2.
 */
export function published<R extends { verified: boolean }>(report: R): R & { ok: boolean } {
  return { ...report, ok: report.verified };
}

export const GENESIS: ChainPosition = { sequence: 0, hash: GENESIS_HASH };

export class ChainVerifier {
  private checked = 0;
  private lastSequence: number;
  private lastHash: string;
  private broken: ChainBreak | null = null;

  /**
   * Starts after `from` (sequence 0 and the genesis hash for a whole chain). With `leaves`, each
   * event verified up to `leaves.upTo` gives its Merkle leaf hash to it, for the tree's root.
   */
  constructor(
    from: { sequence: number; hash: string } = { sequence: 0, hash: GENESIS_HASH },
    private readonly leaves?: LeafSink,
  ) {
    this.lastSequence = from.sequence;
    this.lastHash = from.hash;
  }

  /**
   * Checks the next event; returns false (and stops checking) at the first break. `payloadText`
   * is the payload's canonical text when the caller has it (then `event.payload` is not read).
   */
  push(event: LedgerEvent, payloadText?: string): boolean {
    // The payload is serialised once (when not given): for its digest, and inside the event's own canonical form.
    const text = payloadText ?? canonicalJson(event.payload);
    return this.check(event.sequence, event.id, text, event.payloadDigest, event.previousHash, event.eventHash, () =>
      ledgerEventCanonicalText(event, text),
    );
  }

  /**
   * Checks the next event as the database keeps it (a text row: a page, or a line of COPY): the
   * payload's stored canonical text is hashed as it is, and the event's canonical form is built
   * from the columns (event-rows.ts canonicalTextOfRow), with no event object in between.
   */
  pushRow(row: EventTextRow): boolean {
    const text = payloadTextOfRow(row);
    return this.check(Number(row.sequence), row.id, text, row.payload_digest, row.previous_hash, row.event_hash, () =>
      canonicalTextOfRow(row, text),
    );
  }

  private check(
    sequence: number,
    id: string,
    payloadText: string,
    recordedDigest: string,
    previousHash: string,
    eventHash: string,
    canonicalText: () => string,
  ): boolean {
    if (this.broken) return false;
    const fail = (reason: BreakReason, expected: string, actual: string) => {
      this.broken = { sequence, eventId: id, reason, expected, actual };
      return false;
    };
    if (sequence !== this.lastSequence + 1) return fail('sequence_gap', String(this.lastSequence + 1), String(sequence));
    const payloadDigest = `sha256:${sha256Hex(payloadText)}`;
    if (payloadDigest !== recordedDigest) return fail('payload_digest_mismatch', payloadDigest, recordedDigest);
    if (previousHash !== this.lastHash) return fail('previous_hash_mismatch', this.lastHash, previousHash);
    const computed = `sha256:${sha256Hex(canonicalText())}`;
    if (computed !== eventHash) return fail('event_hash_mismatch', computed, eventHash);
    if (this.leaves && sequence <= this.leaves.upTo) this.leaves.add(eventLeafHash(eventHash));
    this.checked++;
    this.lastSequence = sequence;
    this.lastHash = eventHash;
    return true;
  }

  /** Compares the recorded head (when given) with where the chain ended. */
  finish(head?: { sequence: number; headHash: string }): VerifyReport {
    if (!this.broken && head && (head.sequence !== this.lastSequence || head.headHash !== this.lastHash)) {
      this.broken = {
        sequence: head.sequence,
        eventId: null,
        reason: 'head_mismatch',
        expected: `${this.lastSequence} ${this.lastHash}`,
        actual: `${head.sequence} ${head.headHash}`,
      };
    }
    return {
      verified: this.broken === null,
      checkedEvents: this.checked,
      lastVerified: { sequence: this.lastSequence, hash: this.lastHash },
      head: head ? { sequence: head.sequence, hash: head.headHash } : GENESIS,
      firstBreak: this.broken,
    };
  }
}
