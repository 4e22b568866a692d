/**
 * Signed notes and checkpoints, as C2SP writes them (signed-note, tlog-checkpoint,
 * tlog-cosignature): Ed25519 through node:crypto, text in, text out, so that any of the tools
 * built for Go's sumdb, Sigstore or the witness network reads what we sign.
 *
 * - A note is its text (ending in a newline), a blank line, and one line per signature:
 *   `— <key name> <base64(4-byte key id ‖ signature)>`.
 * - A key is named; its id is the first 4 bytes of SHA-256(name ‖ "\n" ‖ type ‖ public key), with
 *   type 0x01 for a log's Ed25519 key and 0x04 for a witness's Ed25519 cosignature key. Its
 *   verifier key ("vkey") is `<name>+<8 hex id>+<base64(type ‖ public key)>`.
 * - A checkpoint's text is the origin, the tree size in decimal and the base64 root, each a line.
 * - A cosignature signs `cosignature/v1\ntime <t>\n` followed by the checkpoint's text, and its
 *   signature is the 8-byte big-endian time followed by the 64-byte Ed25519 signature.
 */
import { sign, verify } from 'node:crypto';
import { COSIGNATURE_ED25519, keyIdOf, privateKeyOf, publicKeyOf, type NoteKey, type NoteVerifier } from '@/server/keys/note-keys';

// The key half of the format lives with the service's other keys; readers of notes take it from here.
export {
  COSIGNATURE_ED25519,
  generateNoteKey,
  noteKeyFromSeed,
  parseVkey,
  vkeyOf,
  type NoteKey,
  type NoteVerifier,
} from '@/server/keys/note-keys';

const DASH = '\u2014';

/** `— <name> <base64(key id ‖ signature)>\n`. */
function signatureLine(name: string, keyId: Buffer, signature: Buffer): string {
  return `${DASH} ${name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
}

/** The note `text` signed by `key`: the text, a blank line and its signature line. */
export function signNote(text: string, key: NoteKey): string {
  if (!text.endsWith('\n')) throw new Error('a note’s text ends with a newline');
  const signature = sign(null, Buffer.from(text), key.privateKey ?? privateKeyOf(key.seed));
  return `${text}\n${signatureLine(key.name, keyIdOf(key.name, key.type, key.publicKey), signature)}`;
}

/** One signature line of a note, read but not verified. */
export interface NoteSignature {
  name: string;
  keyId: Buffer;
  /** What follows the key id: a signature, or a cosignature's time and signature. */
  signature: Buffer;
  line: string;
}

/** A note cut into its text and its signature lines; throws when it is not a note. */
export function parseNote(note: string): { text: string; signatures: NoteSignature[] } {
  const at = note.lastIndexOf('\n\n');
  if (at < 0 || !note.endsWith('\n')) throw new Error('a note is its text, a blank line and its signatures');
  const text = note.slice(0, at + 1);
  const signatures = note
    .slice(at + 2, -1)
    .split('\n')
    .map((line) => {
      const m = new RegExp(`^${DASH} (\\S+) ([A-Za-z0-9+/]+={0,2})$`).exec(line);
      if (!m) throw new Error(`not a signature line: ${JSON.stringify(line)}`);
      const raw = Buffer.from(m[2]!, 'base64');
      if (raw.length < 5) throw new Error('a signature line holds a key id and a signature');
      return { name: m[1]!, keyId: raw.subarray(0, 4), signature: raw.subarray(4), line: `${line}\n` };
    });
  if (signatures.length === 0) throw new Error('a note has at least one signature');
  return { text, signatures };
}

/** Whether `note` carries a valid signature by `verifier` (a log's key, type 0x01). */
export function verifyNote(note: string, verifier: NoteVerifier): boolean {
  const { text, signatures } = parseNote(note);
  return signatures.some(
    (s) =>
      s.name === verifier.name &&
      s.keyId.equals(verifier.keyId) &&
      s.signature.length === 64 &&
      verify(null, Buffer.from(text), publicKeyOf(verifier.publicKey), s.signature),
  );
}

/** A checkpoint's text: origin, size, base64 root, each a line. */
export function checkpointText(origin: string, size: number, root: Buffer): string {
  return `${origin}\n${size}\n${root.toString('base64')}\n`;
}

/** A checkpoint's text read back; throws on anything but the three C2SP lines (extensions are refused). */
export function parseCheckpoint(text: string): { origin: string; size: number; root: Buffer } {
  const lines = text.split('\n');
  if (lines.length !== 4 || lines[3] !== '') throw new Error('a checkpoint is three lines: origin, size and root');
  const [origin, size, root] = lines as [string, string, string];
  if (origin === '' || !/^(0|[1-9][0-9]*)$/.test(size) || !Number.isSafeInteger(Number(size)))
    throw new Error('a checkpoint’s size is a decimal number');
  const hash = Buffer.from(root, 'base64');
  if (hash.length !== 32 || hash.toString('base64') !== root) throw new Error('a checkpoint’s root is base64 of 32 bytes');
  return { origin, size: Number(size), root: hash };
}

function cosignedMessage(text: string, time: number): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${time}\n${text}`);
}

/** A witness's cosignature line for a checkpoint's text, at `time` (POSIX seconds). */
export function cosignatureLine(text: string, key: NoteKey, time: number): string {
  if (key.type !== COSIGNATURE_ED25519) throw new Error('a cosignature needs a cosignature key (type 0x04)');
  const timestamp = Buffer.alloc(8);
  timestamp.writeBigUInt64BE(BigInt(time));
  const signature = sign(null, cosignedMessage(text, time), privateKeyOf(key.seed));
  return signatureLine(key.name, keyIdOf(key.name, key.type, key.publicKey), Buffer.concat([timestamp, signature]));
}

/** The time of `line`'s cosignature when it is `verifier`'s and valid for the checkpoint's `text`; otherwise null. */
export function verifyCosignature(text: string, line: NoteSignature, verifier: NoteVerifier): number | null {
  if (verifier.type !== COSIGNATURE_ED25519 || line.name !== verifier.name || !line.keyId.equals(verifier.keyId)) return null;
  if (line.signature.length !== 72) return null;
  const time = line.signature.readBigUInt64BE(0);
  if (time > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const ok = verify(null, cosignedMessage(text, Number(time)), publicKeyOf(verifier.publicKey), line.signature.subarray(8));
  return ok ? Number(time) : null;
}
