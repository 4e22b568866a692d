/**
 * Signing in with a passkey (a discoverable credential: the browser offers the person's passkeys
 * for this site, no email typed). The challenge is stateless, so that a stranger asking for
 * challenges writes nothing: 16 random bytes and an expiry, with an HMAC under the instance's auth
 * secret. It is recorded only once answered (webauthn_challenges, by an id derived from it), so
 * an answer is taken once.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { generateAuthenticationOptions, verifyAuthenticationResponse, type AuthenticationResponseJSON } from '@simplewebauthn/server';
import { eq } from 'drizzle-orm';
import type { Database } from '@/db';
import { passkeys, users, webauthnChallenges } from '@/db/schema';
import type { RelyingParty } from './relying-party';

const TTL_MS = 5 * 60_000;
const mac = (secret: string, body: Buffer) => createHmac('sha256', `passkey-sign-in:${secret}`).update(body).digest().subarray(0, 16);

/** Options for navigator.credentials.get() with no credentials named: the browser offers the person's. */
export async function signInOptions(secret: string, rp: RelyingParty) {
  const body = Buffer.alloc(24);
  randomBytes(16).copy(body);
  body.writeBigUInt64BE(BigInt(Date.now() + TTL_MS), 16);
  return generateAuthenticationOptions({
    rpID: rp.id,
    challenge: new Uint8Array(Buffer.concat([body, mac(secret, body)])),
    userVerification: 'required',
  });
}

/** The challenge in a sign-in answer, if this instance made it and it has not expired. */
function ourChallenge(secret: string, challenge: string): Buffer | null {
  const bytes = Buffer.from(challenge, 'base64url');
  if (bytes.length !== 40) return null;
  const body = bytes.subarray(0, 24);
  if (!timingSafeEqual(bytes.subarray(24), mac(secret, body))) return null;
  return Number(body.readBigUInt64BE(16)) > Date.now() ? body : null;
}

export interface PasskeySignedIn {
  id: string;
  email: string;
  name: string;
  epoch: number;
}

/** The person a sign-in answer proves, or null (any failure: the sign-in page says only that it did not work). */
export async function checkPasskeySignIn(
  db: Database,
  secret: string,
  response: AuthenticationResponseJSON,
  rp: RelyingParty,
): Promise<PasskeySignedIn | null> {
  let challenge: string;
  try {
    challenge = (JSON.parse(Buffer.from(response.response.clientDataJSON, 'base64url').toString('utf8')) as { challenge: string })
      .challenge;
  } catch {
    return null;
  }
  const body = typeof challenge === 'string' ? ourChallenge(secret, challenge) : null;
  if (!body) return null;
  const [passkey] = await db
    .select()
    .from(passkeys)
    .where(eq(passkeys.credentialId, String(response.id)));
  if (!passkey) return null;
  let verified;
  try {
    verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: passkey.credentialId, publicKey: new Uint8Array(passkey.publicKey), counter: passkey.counter },
      requireUserVerification: true,
    });
  } catch {
    return null;
  }
  if (!verified.verified) return null;
  return db.transaction(async (tx) => {
    // Taken once: the answer's challenge is recorded by an id its random bytes make.
    const id = body
      .subarray(0, 16)
      .toString('hex')
      .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
    const [fresh] = await tx
      .insert(webauthnChallenges)
      .values({ id, purpose: 'sign_in', userId: null, challenge, expiresAt: new Date(Number(body.readBigUInt64BE(16))) })
      .onConflictDoNothing()
      .returning({ id: webauthnChallenges.id });
    if (!fresh) return null;
    await tx
      .update(passkeys)
      .set({ counter: verified.authenticationInfo.newCounter, lastUsedAt: new Date() })
      .where(eq(passkeys.id, passkey.id));
    const [user] = await tx
      .update(users)
      .set({ lastSignInAt: new Date() })
      .where(eq(users.id, passkey.userId))
      .returning({ id: users.id, email: users.email, name: users.displayName, epoch: users.sessionEpoch });
    return user ?? null;
  });
}
