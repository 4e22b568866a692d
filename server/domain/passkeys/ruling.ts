/**
 * A ruling signed by the approver's passkey. The statement says exactly what is ruled: which
 * decision, which outcome and option, which action (its digest), by whom, with a nonce and when.
 * The WebAuthn challenge is SHA-256 over the statement's RFC 8785 text, so the authenticator's
 * signature (over authenticatorData ‖ SHA-256(clientDataJSON), whose `challenge` is that digest)
 * binds the person's device to this ruling and no other. The approval event keeps the statement
 * and the assertion's three parts; with the `public_key_spki` of the `passkey.registered` event,
 * anyone can check it offline.
 */
import { createHash, randomBytes } from 'node:crypto';
import { generateAuthenticationOptions, verifyAuthenticationResponse, type AuthenticationResponseJSON } from '@simplewebauthn/server';
import { and, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { passkeys } from '@/db/schema';
import { canonicalJson } from '@/server/ledger/canonical';
import type { NewEvent } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { keepChallenge, takeChallenge } from './challenges';
import { registrationMissing } from './register';
import type { RelyingParty } from './relying-party';

/** What a passkey signs for an approval. */
interface RulingStatement {
  decision_id: string;
  outcome: 'approved';
  /** The option chosen, when exactly one is (`approve` for the default pair); null otherwise. */
  option_id: string | null;
  /** Every option chosen, in the order given: what an option_multiselect approval chose, unambiguously. */
  option_ids: string[];
  /** The digest of the action approved (with the approver's arguments when edited); null without an action. */
  action_digest: string | null;
  approver_id: string;
  nonce: string;
  issued_at: string;
}

/** What the event of a passkey-signed approval carries (base64url, as WebAuthn gives them). */
export interface PasskeyProof {
  credential_id: string;
  statement: RulingStatement;
  authenticator_data: string;
  client_data_json: string;
  signature: string;
}

/** The ruling a statement must say: all but its nonce and time. */
export type Ruled = Omit<RulingStatement, 'nonce' | 'issued_at'>;

/** The challenge for a statement: its SHA-256 digest over the RFC 8785 text. */
function statementChallenge(statement: RulingStatement): Buffer {
  return createHash('sha256').update(canonicalJson(statement)).digest();
}

/** The options for navigator.credentials.get() that sign `ruled`, the statement, and the challenge's id. */
export async function rulingChallenge(tx: Tx, actor: Actor, ruled: Ruled, rp: RelyingParty) {
  const mine = await tx.select().from(passkeys).where(eq(passkeys.userId, actor.id));
  if (mine.length === 0) {
    throw new AppError('passkey_required', 'This decision needs your passkey, and you have none: add one at /settings/account.');
  }
  const statement: RulingStatement = { ...ruled, nonce: randomBytes(16).toString('base64url'), issued_at: new Date().toISOString() };
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    challenge: new Uint8Array(statementChallenge(statement)),
    allowCredentials: mine.map((p) => ({ id: p.credentialId, transports: p.transports ?? undefined })),
    userVerification: 'required',
  });
  const challengeId = await keepChallenge(tx, 'ruling', actor.id, options.challenge, { ...statement });
  return { challenge_id: challengeId, statement, options };
}

export interface PasskeyAnswer {
  challenge_id: string;
  response: AuthenticationResponseJSON;
}

const refused = (message: string) => new AppError('validation_failed', message, { issues: [{ path: 'passkey', message }] });

/**
 * Checks the assertion that answers a ruling challenge: the challenge is the actor's, unused and
 * for exactly `ruled`; the passkey is theirs; its signature verifies. Returns the proof to keep,
 * and the `passkey.registered` event the workspace's ledger still lacks (to append first).
 */
export async function verifyRuling(
  tx: Tx,
  actor: Actor,
  ruled: Ruled,
  answer: PasskeyAnswer,
  rp: RelyingParty,
): Promise<{ proof: PasskeyProof; events: NewEvent[] }> {
  if (typeof answer.response.id !== 'string' || typeof answer.response.response !== 'object' || answer.response.response === null) {
    throw refused('The passkey answer is not a WebAuthn assertion.');
  }
  const challenge = await takeChallenge(tx, answer.challenge_id, 'ruling', actor.id);
  const statement = challenge.statement as unknown as RulingStatement;
  const same = (Object.keys(ruled) as (keyof Ruled)[]).every((k) => JSON.stringify(statement[k]) === JSON.stringify(ruled[k]));
  if (!same) throw refused('The passkey signed another ruling (another option, action or decision): sign this one.');
  const [passkey] = await tx
    .select()
    .from(passkeys)
    .where(and(eq(passkeys.credentialId, answer.response.id), eq(passkeys.userId, actor.id)));
  if (!passkey) throw refused('That passkey is not one of yours.');
  let verified;
  try {
    verified = await verifyAuthenticationResponse({
      response: answer.response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: passkey.credentialId, publicKey: new Uint8Array(passkey.publicKey), counter: passkey.counter },
      requireUserVerification: true,
    });
  } catch (err) {
    throw refused(`The passkey’s signature does not verify: ${(err as Error).message}`);
  }
  if (!verified.verified) throw refused('The passkey’s signature does not verify.');
  await tx
    .update(passkeys)
    .set({ counter: verified.authenticationInfo.newCounter, lastUsedAt: new Date() })
    .where(eq(passkeys.id, passkey.id));
  const { authenticatorData, clientDataJSON, signature } = answer.response.response;
  // Kept in the ledger as given: base64url only (a lenient decoder may have read past other characters).
  for (const part of [authenticatorData, clientDataJSON, signature])
    if (!/^[A-Za-z0-9_-]+$/.test(part)) throw refused('The assertion is not base64url.');
  return {
    proof: {
      credential_id: passkey.credentialId,
      statement,
      authenticator_data: authenticatorData,
      client_data_json: clientDataJSON,
      signature,
    },
    events: await registrationMissing(tx, actor.workspaceId, passkey),
  };
}
