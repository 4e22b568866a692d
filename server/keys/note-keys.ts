/**
 * Note keys (C2SP signed-note): named Ed25519 key pairs, their ids and verifier keys ("vkeys"), as
 * a log (type 0x01) and a witness (type 0x04) hold them. Made and opened here, with the service's
 * other keys; what they sign (notes, checkpoints, cosignatures) is the ledger's (server/ledger/note.ts).
 *
 * A key is named; its id is the first 4 bytes of SHA-256(name ‖ "\n" ‖ type ‖ public key). Its
 * verifier key is `<name>+<8 hex id>+<base64(type ‖ public key)>`.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';

/** Signature types: a log's note signature, a witness's timestamped cosignature. */
const NOTE_ED25519 = 0x01;
export const COSIGNATURE_ED25519 = 0x04;
export type KeyType = typeof NOTE_ED25519 | typeof COSIGNATURE_ED25519;

/**
 * A named Ed25519 key pair; `seed` is the 32-byte private key. `privateKey`, when there, is the
 * seed already imported into node:crypto: importing it costs more than the signature itself.
 */
export interface NoteKey {
  name: string;
  type: KeyType;
  publicKey: Buffer;
  seed: Buffer;
  privateKey?: KeyObject;
}

/** What a verifier knows of a key: its name, id, type and public key. */
export interface NoteVerifier {
  name: string;
  keyId: Buffer;
  type: KeyType;
  publicKey: Buffer;
}

// DER prefixes of Ed25519 keys in PKCS#8 and SPKI: node:crypto takes raw keys only through them.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export function privateKeyOf(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

export function publicKeyOf(raw: Buffer): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** Whether a key name is one C2SP allows: not empty, no spaces, no "+". */
function validKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

/** A new key pair named `name`. */
export function generateNoteKey(name: string, type: KeyType = NOTE_ED25519): NoteKey {
  if (!validKeyName(name)) throw new Error(`not a key name: ${JSON.stringify(name)}`);
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_PREFIX.length);
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return { name, type, publicKey: Buffer.from(raw), seed: Buffer.from(seed) };
}

/** The key pair from its seed (the public half is derived). */
export function noteKeyFromSeed(name: string, seed: Buffer, type: KeyType = NOTE_ED25519): NoteKey {
  const privateKey = privateKeyOf(seed);
  const raw = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return { name, type, publicKey: Buffer.from(raw), seed, privateKey };
}

/** SHA-256(name ‖ "\n" ‖ type ‖ public key)[:4]. */
export function keyIdOf(name: string, type: KeyType, publicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(`${name}\n`)
    .update(Buffer.from([type]))
    .update(publicKey)
    .digest()
    .subarray(0, 4);
}

/** `<name>+<8 hex id>+<base64(type ‖ public key)>`. */
export function vkeyOf(key: Pick<NoteKey, 'name' | 'type' | 'publicKey'>): string {
  const id = keyIdOf(key.name, key.type, key.publicKey).toString('hex');
  return `${key.name}+${id}+${Buffer.concat([Buffer.from([key.type]), key.publicKey]).toString('base64')}`;
}

/** Reads a vkey; throws on anything malformed, or on an id that does not match the key. */
export function parseVkey(vkey: string): NoteVerifier {
  // The key's base64 may hold "+" itself: the name and the id end at the first two.
  const m = /^([^+]*)\+([^+]*)\+(.*)$/s.exec(vkey);
  if (!m) throw new Error('a verifier key is <name>+<key id>+<key>');
  const [, name = '', idHex = '', keyB64 = ''] = m;
  if (!validKeyName(name) || !/^[0-9a-f]{8}$/.test(idHex)) throw new Error('a verifier key is <name>+<8 hex digits>+<key>');
  const key = Buffer.from(keyB64, 'base64');
  if (key.toString('base64') !== keyB64 || key.length !== 33) throw new Error('the verifier key’s key is not base64 of 33 bytes');
  const type = key[0];
  if (type !== NOTE_ED25519 && type !== COSIGNATURE_ED25519) throw new Error(`unknown verifier key type 0x${type!.toString(16)}`);
  const publicKey = key.subarray(1);
  const keyId = keyIdOf(name, type, publicKey);
  if (keyId.toString('hex') !== idHex) throw new Error('the verifier key’s id does not match its key');
  return { name, keyId, type, publicKey };
}
