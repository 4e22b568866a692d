/**
 * What the workspaces' Ed25519 keys (checkpoint keys, grant keys) have in common: the instance
 * settings they are made and opened with, how their private halves are sealed at rest, and the
 * bounded cache of private halves already opened for signing.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { decryptSecret, encryptSecret } from './cipher';

/** What signing for a workspace needs of the instance: where it is reached, and the secret its keys are kept under. */
export interface SigningSettings {
  appUrl: string;
  secret: string;
}

/**
 * Seeds are sealed with a purpose of their own, so that one never opens as a webhook secret would.
 * Checkpoint and grant keys share it: the checkpoint keys that signed grants before grants had keys
 * of their own were copied, cipher text and all, into the grant keys (drizzle 0035).
 */
const sealedAs = (settings: SigningSettings) => `ledger-keys:${settings.secret}`;

export function sealSeed(settings: SigningSettings, seed: Buffer): string {
  return encryptSecret(sealedAs(settings), seed.toString('base64'));
}

export function openSeed(settings: SigningSettings, cipher: string): Buffer {
  return Buffer.from(decryptSecret(sealedAs(settings), cipher), 'base64');
}

// DER prefixes of Ed25519 keys in PKCS#8 and SPKI: node:crypto takes raw keys only through them.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** A new Ed25519 key pair as raw bytes: the 32-byte seed (the private key) and the 32-byte public key. */
export function generateEd25519(): { seed: Buffer; publicKey: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    seed: Buffer.from(privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_PREFIX.length)),
    publicKey: Buffer.from(publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length)),
  };
}

/** The private key of a seed, imported for signing. */
export function privateKeyOfSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** The raw public key of an imported private key. */
export function publicKeyOf(privateKey: KeyObject): Buffer {
  return Buffer.from(createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length));
}

/**
 * Private keys already opened and imported, by what names them. Opening (AES-GCM) and importing a
 * key cost more than the signature itself, and a view signs every grant it shows, the integrator
 * every busy workspace's checkpoint each period. Bounded: past `max` the oldest entry goes first.
 * An entry is named by something that fixes the key (its cipher text, or its workspace and
 * thumbprint), so an entry never goes stale; a rotation drops its workspace's entries anyway.
 */
export class OpenedKeys<V> {
  readonly #entries = new Map<string, V>();

  constructor(private readonly max: number) {}

  /** The entry named `name`, if opened already. */
  peek(name: string): V | undefined {
    return this.#entries.get(name);
  }

  /** The entry named `name`, opened with `open` when it is not there. */
  get(name: string, open: () => V): V {
    let value = this.#entries.get(name);
    if (value === undefined) {
      value = open();
      if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(name, value);
    }
    return value;
  }

  /** Drops the entries whose name starts with `prefix`. */
  drop(prefix: string): void {
    for (const name of [...this.#entries.keys()]) if (name.startsWith(prefix)) this.#entries.delete(name);
  }
}
