/**
 * A bundle and receipt verifier written from docs/verification.md's "To check one without our code" alone,
 * importing nothing of the service: if the guide left out something a third party needs, the service's
 * real bundles fail here (test/cli/cli.int.test.ts). Keep it to the guide's words.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';

/** RFC 8785 (JCS) for what JSON.parse yields: keys sorted by UTF-16 code units, ECMAScript number and string forms. */
function jcs(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${jcs((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

const sha256 = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

interface Bundle {
  from: { sequence: number; hash: string };
  events: ({ sequence: number; payload: unknown; payloadDigest: string; previousHash: string; eventHash: string } & Record<
    string,
    unknown
  >)[];
  head: { sequence: number; headHash: string };
  checkpoint?: { note: string; vkeys: string[]; subtrees: string[] } | null;
}

/** The first sequence whose event breaks the guide's rules (or `'head'`), or null when the bundle holds. */
export function firstBreak(bundle: Bundle): number | 'head' | null {
  let sequence = bundle.from.sequence;
  let hash = bundle.from.hash;
  for (const event of bundle.events) {
    const { eventHash, ...rest } = event;
    const ok =
      event.sequence === sequence + 1 &&
      event.payloadDigest === sha256(jcs(event.payload)) &&
      event.previousHash === hash &&
      eventHash === sha256(jcs(rest));
    if (!ok) return event.sequence === sequence + 1 ? event.sequence : sequence + 1;
    sequence = event.sequence;
    hash = eventHash;
  }
  return bundle.head.sequence === sequence && bundle.head.headHash === hash ? null : 'head';
}

/** Step 3: both bundles hold, and the earlier one's head lies on the later one's chain. */
export function extendsEarlier(later: Bundle, earlier: Bundle): boolean {
  if (firstBreak(earlier) !== null || firstBreak(later) !== null) return false;
  const { sequence, headHash } = earlier.head;
  if (later.from.sequence === sequence && later.from.hash === headHash) return true;
  return later.events.some((e) => e.sequence === sequence && e.eventHash === headHash);
}

const bytes = (...parts: (Buffer | number[])[]) => Buffer.concat(parts.map((p) => Buffer.from(p)));
const h = (...parts: (Buffer | number[])[]) =>
  createHash('sha256')
    .update(bytes(...parts))
    .digest();
const leafOf = (eventHash: string) => h([0], Buffer.from(eventHash.slice('sha256:'.length), 'hex'));
const node = (left: Buffer, right: Buffer) => h([1], left, right);

/** Step 4: the note's text and checkpoint, when the signature line of `vkey` verifies it; null when it does not. */
function checkNote(note: string, vkey: string): { origin: string; size: number; root: Buffer } | null {
  const end = note.indexOf('\n\n');
  if (end < 0) return null;
  const text = note.slice(0, end + 1);
  // Split at the first two "+": the key's base64 may hold "+" itself.
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  const [name, keyIdHex, keyText] = [vkey.slice(0, first), vkey.slice(first + 1, second), vkey.slice(second + 1)];
  const key = Buffer.from(keyText, 'base64');
  if (key[0] !== 0x01 || key.length !== 33) return null;
  const publicKey = key.subarray(1);
  if (
    !h(Buffer.from(`${name}\n`), [0x01], publicKey)
      .subarray(0, 4)
      .equals(Buffer.from(keyIdHex, 'hex'))
  )
    return null;
  const ed25519 = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey.toString('base64url') }, format: 'jwk' });
  const signed = note
    .slice(end + 2)
    .split('\n')
    .some((line) => {
      const match = /^\u2014 (\S+) (\S+)$/.exec(line);
      if (!match || match[1] !== name) return false;
      const sig = Buffer.from(match[2]!, 'base64');
      return sig.subarray(0, 4).toString('hex') === keyIdHex && verify(null, Buffer.from(text, 'utf8'), ed25519, sig.subarray(4));
    });
  if (!signed) return null;
  const [origin, size, root] = text.split('\n');
  return { origin: origin!, size: Number(size), root: Buffer.from(root!, 'base64') };
}

/** Steps 4 and 5: the bundle's checkpoint is signed by `vkey`, of this workspace's log, at its head, over its events. */
export function checkpointHolds(bundle: Bundle & { workspaceId: string }, vkey: string): boolean {
  if (!bundle.checkpoint) return false;
  const signed = checkNote(bundle.checkpoint.note, vkey);
  if (!signed || !signed.origin.endsWith(`/workspaces/${bundle.workspaceId}`) || signed.size !== bundle.head.sequence) return false;
  // The list: the subtrees before the bundle, each with the number of leaves it covers.
  const list: { width: number; hash: Buffer }[] = [];
  const widths = [...bundle.from.sequence.toString(2)].flatMap((bit, i, all) => (bit === '1' ? [2 ** (all.length - 1 - i)] : []));
  if (widths.length !== bundle.checkpoint.subtrees.length) return false;
  widths.forEach((width, i) => list.push({ width, hash: Buffer.from(bundle.checkpoint!.subtrees[i]!, 'base64') }));
  for (const event of bundle.events) {
    list.push({ width: 1, hash: leafOf(event.eventHash) });
    while (list.length >= 2 && list[list.length - 1]!.width === list[list.length - 2]!.width) {
      const right = list.pop()!;
      const left = list.pop()!;
      list.push({ width: left.width * 2, hash: node(left.hash, right.hash) });
    }
  }
  if (list.length === 0) return false;
  let root = list[list.length - 1]!.hash;
  for (let i = list.length - 2; i >= 0; i--) root = node(list[i]!.hash, root);
  return root.equals(signed.root);
}

/** A receipt's ledger_proof: the note signed by `vkey`, and RFC 9162 §2.1.3.2 from the recording event's leaf to its root. */
export function receiptProofHolds(
  receipt: {
    evidence: { digest: string }[];
    ledger_proof?: { checkpoint: string; leaf_index: number; tree_size: number; inclusion_path: string[] };
  },
  vkey: string,
): boolean {
  const proof = receipt.ledger_proof;
  if (!proof) return false;
  const signed = checkNote(proof.checkpoint, vkey);
  if (!signed || signed.size !== proof.tree_size || proof.leaf_index >= proof.tree_size) return false;
  let fn = proof.leaf_index;
  let sn = proof.tree_size - 1;
  let r = leafOf(receipt.evidence[0]!.digest);
  for (const p of proof.inclusion_path.map((x) => Buffer.from(x, 'base64'))) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) [fn, sn] = [fn >> 1, sn >> 1];
    } else r = node(r, p);
    [fn, sn] = [fn >> 1, sn >> 1];
  }
  return sn === 0 && r.equals(signed.root);
}
