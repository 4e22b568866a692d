/**
 * Signed notes against the Go reference implementation's own vector (golang.org/x/mod/sumdb/note:
 * the PeterNeumann key and note), and checkpoints and cosignatures in C2SP's form.
 */
import { describe, expect, it } from 'vitest';
import {
  checkpointText,
  COSIGNATURE_ED25519,
  cosignatureLine,
  generateNoteKey,
  noteKeyFromSeed,
  parseCheckpoint,
  parseNote,
  parseVkey,
  signNote,
  verifyCosignature,
  verifyNote,
  vkeyOf,
} from './note';

const VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const SIG = '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';

describe('signed notes (C2SP signed-note)', () => {
  it('derive the Go vector’s verifier key from its signing key, and sign its note byte for byte', () => {
    const seed = Buffer.from(SKEY.split('+').slice(4).join('+'), 'base64').subarray(1);
    const key = noteKeyFromSeed('PeterNeumann', seed);
    expect(vkeyOf(key)).toBe(VKEY);
    expect(signNote(TEXT, key)).toBe(`${TEXT}\n${SIG}`);
    expect(verifyNote(`${TEXT}\n${SIG}`, parseVkey(VKEY))).toBe(true);
  });

  it('refuse a note with its text, its signature or its signer changed', () => {
    const verifier = parseVkey(VKEY);
    expect(verifyNote(`${TEXT.replace('answer', 'Answer')}\n${SIG}`, verifier)).toBe(false);
    expect(verifyNote(`${TEXT}\n${SIG.replace('x08go', 'x08gp')}`, verifier)).toBe(false);
    const other = generateNoteKey('PeterNeumann');
    expect(verifyNote(signNote(TEXT, other), verifier)).toBe(false);
    expect(verifyNote(signNote(TEXT, other), parseVkey(vkeyOf(other)))).toBe(true);
    expect(() => parseNote(TEXT)).toThrow();
  });

  it('refuse verifier keys that are malformed or whose id does not match', () => {
    for (const bad of [
      VKEY.replace('c74f20a3', 'c74f20a4'),
      VKEY.replace('PeterNeumann', 'Peter Neumann'),
      VKEY.slice(0, -2),
      `${VKEY}+x`,
      'PeterNeumann+c74f20a3',
      VKEY.replace('+ARpc', '+AhRpc'),
    ]) {
      expect(() => parseVkey(bad), bad).toThrow();
    }
  });

  it('write and read a checkpoint: origin, size, base64 root', () => {
    const root = Buffer.alloc(32, 7);
    const text = checkpointText('example.com/workspaces/w1', 42, root);
    expect(text).toBe(`example.com/workspaces/w1\n42\n${root.toString('base64')}\n`);
    expect(parseCheckpoint(text)).toEqual({ origin: 'example.com/workspaces/w1', size: 42, root });
    for (const bad of [
      'a\n01\nAA==\n',
      'a\n1\nAA==\n',
      `a\n1\n${root.toString('base64')}\nextension\n`,
      `a\n1\n${root.toString('base64')}`,
    ]) {
      expect(() => parseCheckpoint(bad), bad).toThrow();
    }
  });

  it('cosign a checkpoint as tlog-cosignature says: time and signature, key type 0x04', () => {
    const log = generateNoteKey('example.com/workspaces/w1');
    const text = checkpointText(log.name, 10, Buffer.alloc(32, 1));
    const witness = generateNoteKey('witness.example/w1', COSIGNATURE_ED25519);
    const line = cosignatureLine(text, witness, 1_700_000_000);
    const cosigned = signNote(text, log) + line;
    const { signatures } = parseNote(cosigned);
    expect(signatures).toHaveLength(2);
    const verifier = parseVkey(vkeyOf(witness));
    expect(verifier.type).toBe(COSIGNATURE_ED25519);
    expect(verifyCosignature(text, signatures[1]!, verifier)).toBe(1_700_000_000);
    // The log's signature still verifies with the cosignature after it.
    expect(verifyNote(cosigned, parseVkey(vkeyOf(log)))).toBe(true);
    // Another checkpoint, or the log's own line, is not this witness's cosignature.
    expect(verifyCosignature(checkpointText(log.name, 11, Buffer.alloc(32, 1)), signatures[1]!, verifier)).toBeNull();
    expect(verifyCosignature(text, signatures[0]!, verifier)).toBeNull();
    expect(() => cosignatureLine(text, log, 1)).toThrow();
  });
});
