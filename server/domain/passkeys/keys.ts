/**
 * A passkey's public key as DER SubjectPublicKeyInfo, from the COSE key its authenticator gave:
 * what the ledger carries (`passkey.registered`), so that anyone can check an assertion with any
 * crypto library and no CBOR. Only the algorithms registration offers: ES256, EdDSA, RS256.
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { cose, decodeCredentialPublicKey } from '@simplewebauthn/server/helpers';

/** COSE algorithms a passkey may use here: each has a SubjectPublicKeyInfo form node:crypto writes. */
export const PASSKEY_ALGORITHMS = [cose.COSEALG.ES256, cose.COSEALG.EdDSA, cose.COSEALG.RS256];

const b64url = (bytes: Uint8Array | undefined) => {
  if (!bytes) throw new Error('the COSE key lacks a coordinate');
  return Buffer.from(bytes).toString('base64url');
};

export function spkiOf(coseKey: Uint8Array): { spki: Buffer; algorithm: number } {
  const key = decodeCredentialPublicKey(new Uint8Array(coseKey));
  const algorithm = key.get(cose.COSEKEYS.alg);
  let jwk: JsonWebKey;
  // The key's type and curve must be the ones its algorithm names: the ledger says which it is.
  if (algorithm === cose.COSEALG.ES256 && cose.isCOSEPublicKeyEC2(key) && key.get(cose.COSEKEYS.crv) === cose.COSECRV.P256) {
    jwk = { kty: 'EC', crv: 'P-256', x: b64url(key.get(cose.COSEKEYS.x)), y: b64url(key.get(cose.COSEKEYS.y)) };
  } else if (algorithm === cose.COSEALG.EdDSA && cose.isCOSEPublicKeyOKP(key) && key.get(cose.COSEKEYS.crv) === cose.COSECRV.ED25519) {
    jwk = { kty: 'OKP', crv: 'Ed25519', x: b64url(key.get(cose.COSEKEYS.x)) };
  } else if (algorithm === cose.COSEALG.RS256 && cose.isCOSEPublicKeyRSA(key)) {
    jwk = { kty: 'RSA', n: b64url(key.get(cose.COSEKEYS.n)), e: b64url(key.get(cose.COSEKEYS.e)) };
  } else {
    throw new Error(`a COSE key of an algorithm not offered (${String(algorithm)})`);
  }
  const spki = createPublicKey({ key: jwk, format: 'jwk' }).export({ format: 'der', type: 'spki' });
  return { spki, algorithm: Number(algorithm) };
}
