/**
 * Adding a passkey (/settings/account): the options the browser needs, then its answer verified
 * (@simplewebauthn/server) and kept, with a `passkey.registered` event in the ledger of every
 * workspace the person belongs to, carrying the public key as SubjectPublicKeyInfo: a ruling it
 * signs there can be checked against the ledger alone.
 */
import { randomUUID } from 'node:crypto';
import { generateRegistrationOptions, verifyRegistrationResponse, type RegistrationResponseJSON } from '@simplewebauthn/server';
import { and, asc, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { ledgerEvents, memberships, passkeys, users } from '@/db/schema';
import { appendEvents, type NewEvent } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor, Trace } from '../actor';
import { keepChallenge, takeChallenge } from './challenges';
import { PASSKEY_ALGORITHMS, spkiOf } from './keys';
import type { RelyingParty } from './relying-party';

type PasskeyRow = typeof passkeys.$inferSelect;

/** The options for navigator.credentials.create(), and the id of the challenge in them. */
export async function registrationOptions(tx: Tx, userId: string, rp: RelyingParty) {
  const [user] = await tx.select().from(users).where(eq(users.id, userId));
  if (!user) throw new AppError('not_found', 'No such account.');
  const existing = await tx
    .select({ id: passkeys.credentialId, transports: passkeys.transports })
    .from(passkeys)
    .where(eq(passkeys.userId, userId));
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.displayName,
    userID: Buffer.from(user.id.replaceAll('-', ''), 'hex'),
    attestationType: 'none',
    excludeCredentials: existing.map((c) => ({ id: c.id, transports: c.transports ?? undefined })),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
    supportedAlgorithmIDs: PASSKEY_ALGORITHMS,
  });
  const challengeId = await keepChallenge(tx, 'register', userId, options.challenge);
  return { challenge_id: challengeId, options };
}

export interface AddPasskeyInput {
  challenge_id: string;
  response: RegistrationResponseJSON;
  name?: string;
}

const refused = (message: string) => new AppError('validation_failed', message, { issues: [{ path: 'response', message }] });

/** Verifies the browser's answer to a registration challenge and keeps the passkey. */
export async function addPasskey(tx: Tx, userId: string, trace: Trace, input: AddPasskeyInput, rp: RelyingParty): Promise<PasskeyRow> {
  const challenge = await takeChallenge(tx, input.challenge_id, 'register', userId);
  let verified;
  try {
    verified = await verifyRegistrationResponse({
      response: input.response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
      supportedAlgorithmIDs: PASSKEY_ALGORITHMS,
    });
  } catch (err) {
    throw refused(`The passkey could not be verified: ${(err as Error).message}`);
  }
  if (!verified.verified) throw refused('The passkey could not be verified.');
  const { credential } = verified.registrationInfo;
  const [taken] = await tx.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.credentialId, credential.id));
  if (taken) throw new AppError('conflict', 'That passkey is already registered.');
  let key: ReturnType<typeof spkiOf>;
  try {
    key = spkiOf(credential.publicKey);
  } catch (err) {
    throw refused(`The passkey’s public key is not one this service takes: ${(err as Error).message}`);
  }
  const { spki, algorithm } = key;
  const [row] = await tx
    .insert(passkeys)
    .values({
      id: randomUUID(),
      userId,
      credentialId: credential.id,
      publicKey: Buffer.from(credential.publicKey),
      publicKeySpki: spki,
      algorithm,
      counter: credential.counter,
      transports: credential.transports ?? null,
      name: input.name?.trim() || 'Passkey',
    })
    .returning();
  for (const actor of await actorsOf(tx, userId, trace)) await appendEvents(tx, actor, [registeredEvent(row!)]);
  return row!;
}

/** Removes the user's passkey `id`, announced in each of their workspaces; false when they have none by that id. */
export async function removePasskey(tx: Tx, userId: string, trace: Trace, id: string): Promise<boolean> {
  const [gone] = await tx
    .delete(passkeys)
    .where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))
    .returning();
  if (!gone) return false;
  for (const actor of await actorsOf(tx, userId, trace)) {
    await appendEvents(tx, actor, [
      {
        aggregateType: 'passkey',
        aggregateId: gone.id,
        eventType: 'passkey.removed',
        payload: { passkey_id: gone.id, user_id: userId, credential_id: gone.credentialId },
      },
    ]);
  }
  return true;
}

/** The user acting in each of their workspaces, in one order, so that two such changes never wait on each other's ledgers. */
async function actorsOf(tx: Tx, userId: string, trace: Trace): Promise<Actor[]> {
  const mine = await tx
    .select({ workspaceId: memberships.workspaceId, role: memberships.role })
    .from(memberships)
    .where(eq(memberships.userId, userId))
    .orderBy(asc(memberships.workspaceId));
  return mine.map((m) => ({ type: 'human', id: userId, ownerId: userId, workspaceId: m.workspaceId, role: m.role, trace }));
}

function registeredEvent(row: PasskeyRow): NewEvent {
  return {
    aggregateType: 'passkey',
    aggregateId: row.id,
    eventType: 'passkey.registered',
    payload: {
      passkey_id: row.id,
      user_id: row.userId,
      credential_id: row.credentialId,
      public_key_spki: row.publicKeySpki.toString('base64'),
      algorithm: row.algorithm,
      name: row.name,
    },
  };
}

/**
 * The `passkey.registered` event a workspace's ledger lacks for `row` (its owner joined the
 * workspace after adding it), to append before a ruling it signs there; none when it has it.
 */
export async function registrationMissing(tx: Tx, workspaceId: string, row: PasskeyRow): Promise<NewEvent[]> {
  const [found] = await tx
    .select({ id: ledgerEvents.id })
    .from(ledgerEvents)
    .where(
      and(
        eq(ledgerEvents.workspaceId, workspaceId),
        eq(ledgerEvents.aggregateId, row.id),
        eq(ledgerEvents.eventType, 'passkey.registered'),
      ),
    )
    .limit(1);
  return found ? [] : [registeredEvent(row)];
}
