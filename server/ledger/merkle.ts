/**
 * The Merkle tree over a workspace's ledger (RFC 9162 §2.1): leaf `i` is the event at sequence
 * `i + 1`, its hash SHA-256(0x00 ‖ the 32 bytes of the event's eventHash), an interior node
 * SHA-256(0x01 ‖ left ‖ right), and the root of a tree of n leaves is RFC 9162's MTH.
 *
 * Every hash a proof or a root needs is the hash of a range of leaves that RFC 9162's recursion
 * produces (split at the largest power of two below the size). Such a range either is a complete,
 * aligned subtree (a **node**: `level` L covers 2^L leaves from `index · 2^L`), which the tile
 * store keeps (tiles.ts), or is made of a few nodes of decreasing size, folded right to left. So a
 * proof is computed in two steps: say which nodes it needs (`inclusionPlan`, `consistencyPlan`),
 * read them in one query, and fold (`hashesOf`). Nothing here touches the database.
 *
 * The verifiers are RFC 9162 §2.1.3.2 and §2.1.4.2, as an outside verifier would write them.
 */
import crypto from 'node:crypto';

/** A complete, aligned subtree: 2^level leaves starting at leaf index · 2^level. */
export interface TreeNode {
  level: number;
  index: number;
}

/** Leaves [start, end): a range the RFC's recursion produces. */
interface LeafRange {
  start: number;
  end: number;
}

const LEAF = Buffer.from([0x00]);
const INTERIOR = Buffer.from([0x01]);

// One-shot hashing (crypto.hash, Node ≥ 20.12) of one buffer: verification hashes a leaf and about
// one interior node per event, and a Hash object per call cost more than the hashing of 33 or 65
// bytes. The inputs are assembled in these scratch buffers (the result is a new Buffer each time).
const oneShot = (crypto as unknown as { hash?: (algorithm: string, data: Uint8Array, encoding: 'buffer') => Buffer }).hash;
const leafInput = Buffer.alloc(33, 0x00);
const interiorInput = Buffer.alloc(65, 0x01);

/** SHA-256(0x00 ‖ data). */
export function leafHash(data: Uint8Array): Buffer {
  if (oneShot && data.length === 32) {
    leafInput.set(data, 1);
    return oneShot('sha256', leafInput, 'buffer');
  }
  return crypto.createHash('sha256').update(LEAF).update(data).digest();
}

/** SHA-256(0x01 ‖ left ‖ right). */
export function interiorHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (oneShot && left.length === 32 && right.length === 32) {
    interiorInput.set(left, 1);
    interiorInput.set(right, 33);
    return oneShot('sha256', interiorInput, 'buffer');
  }
  return crypto.createHash('sha256').update(INTERIOR).update(left).update(right).digest();
}

/** The leaf hash of an event, from its `eventHash` (`sha256:` and 64 hex digits). */
export function eventLeafHash(eventHash: string): Buffer {
  if (!/^sha256:[0-9a-f]{64}$/.test(eventHash)) throw new Error(`not an event hash: ${eventHash}`);
  return leafHash(Buffer.from(eventHash.slice(7), 'hex'));
}

/** The hash of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT: Buffer = crypto.createHash('sha256').digest();

/** The largest power of two strictly below n (n ≥ 2). */
function splitOf(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The nodes whose hashes make the hash of `range`, largest first: the range's size in binary, one
 * node per bit set. A range the recursion produces starts at a multiple of its first node's size.
 */
function nodesOfRange(range: LeafRange): TreeNode[] {
  const nodes: TreeNode[] = [];
  let start = range.start;
  let left = range.end - range.start;
  if (left <= 0) throw new Error(`empty leaf range [${range.start}, ${range.end})`);
  while (left > 0) {
    const level = Math.floor(Math.log2(left));
    const size = 2 ** level;
    if (start % size !== 0) throw new Error(`leaf range [${range.start}, ${range.end}) is not aligned`);
    nodes.push({ level, index: start / size });
    start += size;
    left -= size;
  }
  return nodes;
}

/** A node's place as a map key. */
export function nodeKey(node: TreeNode): string {
  return `${node.level}/${node.index}`;
}

/** The hash of a range, given its nodes' hashes (largest first): folded right to left, as MTH splits. */
export function foldNodes(hashes: readonly Buffer[]): Buffer {
  let hash = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) hash = interiorHash(hashes[i]!, hash);
  return hash;
}

/** What a proof or root needs: its ranges in order, and the distinct nodes they are made of. */
export interface Plan {
  ranges: LeafRange[];
  nodes: TreeNode[];
}

function planOf(ranges: LeafRange[]): Plan {
  const seen = new Map<string, TreeNode>();
  for (const range of ranges) for (const node of nodesOfRange(range)) seen.set(nodeKey(node), node);
  return { ranges, nodes: [...seen.values()] };
}

/** The hashes of a plan's ranges, in order, from its nodes' hashes (by nodeKey). */
export function hashesOf(plan: Plan, nodeHashes: ReadonlyMap<string, Buffer>): Buffer[] {
  return plan.ranges.map((range) =>
    foldNodes(
      nodesOfRange(range).map((node) => {
        const hash = nodeHashes.get(nodeKey(node));
        if (!hash) throw new Error(`tree node ${nodeKey(node)} is missing`);
        return hash;
      }),
    ),
  );
}

/** The root of a tree of `size` leaves: one range (none for the empty tree, whose root is EMPTY_ROOT). */
export function rootPlan(size: number): Plan {
  return planOf(size === 0 ? [] : [{ start: 0, end: size }]);
}

/** RFC 9162 §2.1.3.1 PATH(index, D[0:size]): the ranges whose hashes are the audit path, leaf side first. */
export function inclusionPlan(index: number, size: number): Plan {
  if (!(index >= 0 && index < size)) throw new Error(`leaf ${index} is not in a tree of ${size}`);
  const ranges: LeafRange[] = [];
  const path = (m: number, start: number, end: number): void => {
    const n = end - start;
    if (n <= 1) return;
    const k = splitOf(n);
    if (m < k) {
      path(m, start, start + k);
      ranges.push({ start: start + k, end });
    } else {
      path(m - k, start + k, end);
      ranges.push({ start, end: start + k });
    }
  };
  path(index, 0, size);
  return planOf(ranges);
}

/** RFC 9162 §2.1.4.1 PROOF(from, D[0:to]): the ranges whose hashes are the consistency proof. */
export function consistencyPlan(from: number, to: number): Plan {
  if (!(from >= 0 && from <= to)) throw new Error(`no consistency proof from ${from} to ${to}`);
  const ranges: LeafRange[] = [];
  if (from === 0 || from === to) return planOf(ranges);
  const subproof = (m: number, start: number, end: number, whole: boolean): void => {
    const n = end - start;
    if (m === n) {
      if (!whole) ranges.push({ start, end });
      return;
    }
    const k = splitOf(n);
    if (m <= k) {
      subproof(m, start, start + k, whole);
      ranges.push({ start: start + k, end });
    } else {
      subproof(m - k, start + k, end, false);
      ranges.push({ start, end: start + k });
    }
  };
  subproof(from, 0, to, true);
  return planOf(ranges);
}

/** MTH over leaf hashes held in memory (a bundle's events, tests): RFC 9162 §2.1.1 as written. */
export function rootOfLeaves(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT;
  // Bottom-up over complete levels gives the same tree as the recursion: a lone node at the end
  // of a level is carried up unpaired, which is where MTH's split puts it.
  let level: Uint8Array[] = [...leaves];
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(interiorHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  const root = level[0]!;
  return Buffer.from(root.buffer, root.byteOffset, root.byteLength);
}

/** A node given by its hash: 2^level leaves (its place is implied by where it is appended). */
export interface HashedNode {
  level: number;
  hash: Uint8Array;
}

/**
 * The Merkle tree of a run of leaves [begin, end), grown left to right, kept as its largest
 * aligned subtrees (a compact range, as Trillian calls it): O(log n) memory however many leaves.
 * From leaf 0 it is the size in binary, one subtree per bit, largest first, and gives the root;
 * what a verifier uses to compute the root of a chain it reads once, in order. Leaves, or whole
 * aligned nodes (a worker thread's share of a batch: `rangeNodes`), are appended in order. A
 * range that starts later (a bundle's events after its `from`) is joined to the subtrees before
 * it with `extend`.
 */
export class TreeAccumulator {
  private readonly nodes: { level: number; start: number; hash: Uint8Array }[] = [];
  private next: number;

  constructor(readonly begin = 0) {
    this.next = begin;
  }

  /** Leaves appended so far. */
  get size(): number {
    return this.next - this.begin;
  }

  /** Where the next leaf goes: `begin` plus the leaves appended. */
  get end(): number {
    return this.next;
  }

  /** Appends a complete subtree of 2^level leaves, which must start at a multiple of 2^level. */
  append(level: number, hash: Uint8Array): void {
    const width = 2 ** level;
    if (this.next % width !== 0) throw new Error(`a node of ${width} leaves cannot start at leaf ${this.next}`);
    let node = { level, start: this.next, hash };
    // Two subtrees of the same size side by side, the left one starting at a multiple of twice
    // that size, are the two halves of one: a binary counter, from leaf 0.
    for (let top = this.nodes.at(-1); top && top.level === node.level && top.start % (2 * 2 ** top.level) === 0; top = this.nodes.at(-1)) {
      this.nodes.pop();
      node = { level: node.level + 1, start: top.start, hash: interiorHash(top.hash, node.hash) };
    }
    this.nodes.push(node);
    this.next += width;
  }

  appendLeaf(hash: Uint8Array): void {
    this.append(0, hash);
  }

  /** Appends the subtrees of `range`, a run that starts where this one ends. */
  extend(range: TreeAccumulator): void {
    if (range.begin !== this.next) throw new Error(`a range from leaf ${range.begin} does not follow one ending at ${this.next}`);
    for (const node of range.nodes) this.append(node.level, node.hash);
  }

  /** Its subtrees' hashes, left to right: from leaf 0, with the size, all `resume` needs to go on later. */
  get hashes(): Uint8Array[] {
    return this.nodes.map((n) => n.hash);
  }

  /** The tree of `size` leaves from 0, from its subtrees' hashes (largest first, as `hashes` gives them). */
  /** How many subtrees a tree of `size` leaves is kept as: one per set bit of its size. */
  static subtreesOf(size: number): number {
    let n = 0;
    for (let rest = size; rest > 0; rest = Math.floor(rest / 2)) n += rest % 2;
    return n;
  }

  static resume(size: number, hashes: readonly Uint8Array[]): TreeAccumulator {
    const levels: number[] = [];
    for (let level = Math.floor(Math.log2(Math.max(size, 1))); level >= 0; level--) {
      if (Math.floor(size / 2 ** level) % 2 === 1) levels.push(level);
    }
    if (levels.length !== hashes.length) throw new Error(`a tree of ${size} leaves has ${levels.length} subtrees, not ${hashes.length}`);
    const acc = new TreeAccumulator();
    levels.forEach((level, i) => acc.append(level, hashes[i]!));
    return acc;
  }

  /** MTH of the leaves from 0: the subtrees folded right to left, as RFC 9162's split does. */
  root(): Buffer {
    if (this.begin !== 0) throw new Error(`a range from leaf ${this.begin} has no root of its own`);
    if (this.nodes.length === 0) return EMPTY_ROOT;
    let hash = this.nodes[this.nodes.length - 1]!.hash;
    for (let i = this.nodes.length - 2; i >= 0; i--) hash = interiorHash(this.nodes[i]!.hash, hash);
    return Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength);
  }
}

/**
 * The aligned nodes covering leaves [start, start + leaves.length), left to right, with their
 * hashes: the largest node that starts at each place and fits. Appended in order to a
 * TreeAccumulator of `start` leaves, they extend it as the leaves one by one would.
 */
export function rangeNodes(start: number, leaves: readonly Uint8Array[]): HashedNode[] {
  const nodes: HashedNode[] = [];
  const end = start + leaves.length;
  for (let at = start; at < end;) {
    let level = 0;
    while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= end) level++;
    const width = 2 ** level;
    nodes.push({ level, hash: rootOfLeaves(leaves.slice(at - start, at - start + width)) });
    at += width;
  }
  return nodes;
}

/** RFC 9162 §2.1.3.2: whether `path` proves leaf `index` with `leaf` hash in a tree of `size` with `root`. */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, path: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!(index >= 0 && index < size)) return false;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = interiorHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = interiorHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 §2.1.4.2: whether `proof` shows the tree of `to` leaves with `toRoot` extends the one of `from` with `fromRoot`. */
export function verifyConsistency(
  from: number,
  to: number,
  proof: readonly Uint8Array[],
  fromRoot: Uint8Array,
  toRoot: Uint8Array,
): boolean {
  if (!(from >= 0 && from <= to)) return false;
  if (from === to) return proof.length === 0 && Buffer.from(fromRoot).equals(toRoot);
  if (from === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  const path = [...proof];
  // If `from` is a power of two, its root is the first node of the path.
  if (Number.isInteger(Math.log2(from))) path.unshift(fromRoot);
  let fn = from - 1;
  let sn = to - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = Buffer.from(path[0]!);
  let sr: Buffer = Buffer.from(path[0]!);
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = interiorHash(c, fr);
      sr = interiorHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = interiorHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(fromRoot) && sr.equals(toRoot) && sn === 0;
}
