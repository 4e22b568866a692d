/**
 * A software WebAuthn authenticator for the integration tests: an ES256 key pair that answers
 * registration (attestation "none") and authentication challenges exactly as a browser hands an
 * authenticator's answer to the page, so the service's WebAuthn checks run on real signatures
 * over HTTP. (In Chromium, the e2e tests use the browser's own virtual authenticator.)
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';

const b64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64url');
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  private readonly privateKey: KeyObject;
  private readonly jwk: { x: string; y: string };
  private counter = 0;

  constructor(
    private readonly rpId: string,
    private readonly origin: string,
  ) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = privateKey;
    this.jwk = publicKey.export({ format: 'jwk' }) as { x: string; y: string };
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  /** The answer to `options` of navigator.credentials.create(). */
  register(options: { challenge: string }) {
    const coseKey = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(this.jwk.x, 'base64url')],
        [-3, Buffer.from(this.jwk.y, 'base64url')],
      ]),
    );
    const length = Buffer.alloc(2);
    length.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      sha256(this.rpId),
      Buffer.from([0x45]), // user present, user verified, attested credential data
      Buffer.alloc(4),
      Buffer.alloc(16), // AAGUID: none
      length,
      this.credentialId,
      Buffer.from(coseKey),
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]) as never,
    );
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key' as const,
      response: {
        clientDataJSON: this.clientData('webauthn.create', options.challenge),
        attestationObject: b64url(attestationObject),
        transports: ['internal' as const],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform' as const,
    };
  }

  /** The answer to `options` of navigator.credentials.get(): a signature over the challenge. */
  assert(options: { challenge: string }, opts: { origin?: string } = {}) {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(++this.counter);
    const authenticatorData = Buffer.concat([sha256(this.rpId), Buffer.from([0x05]), count]);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge, opts.origin);
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(Buffer.from(clientDataJSON, 'base64url'))]), this.privateKey);
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key' as const,
      response: { clientDataJSON, authenticatorData: b64url(authenticatorData), signature: b64url(signature) },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform' as const,
    };
  }

  private clientData(type: string, challenge: string, origin = this.origin): string {
    return b64url(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }
}
