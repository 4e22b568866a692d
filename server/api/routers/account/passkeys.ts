/**
 * The signed-in person's passkeys, for the web interface (/settings/account): the list, the
 * options to add one with, and adding it. WebAuthn answers are checked by @simplewebauthn/server
 * (server/domain/passkeys/register.ts).
 */
import { z } from 'zod';
import { asc, eq } from 'drizzle-orm';
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { signInOptions } from '@/server/domain/passkeys/sign-in';
import { passkeys } from '@/db/schema';
import { addPasskey, registrationOptions, removePasskey } from '@/server/domain/passkeys/register';
import { accountBucket, countAttempt, settleSuccess, tooManyAttempts } from '@/server/auth/attempt-limits';
import { attemptLimitsOf } from '@/server/auth/sign-in';
import { checkCurrentPassword } from '@/server/domain/accounts/accounts';
import { password } from './shared';
import { relyingParty } from '@/server/domain/passkeys/relying-party';
import { humanProcedure, publicProcedure } from '../../trpc';
import { id, text, timestamp } from '../../schemas';

/**
 * A WebAuthn answer as @simplewebauthn/browser hands it over (a JSON object of at most 64 KiB),
 * checked whole by @simplewebauthn/server.
 */
export const webauthnAnswer = <T>() =>
  z
    .custom<T>((v) => v !== null && typeof v === 'object' && !Array.isArray(v) && Buffer.byteLength(JSON.stringify(v)) <= 64 * 1024, {
      message: 'must be a WebAuthn answer: a JSON object of at most 65,536 bytes',
    })
    .meta({ override: { type: 'object', additionalProperties: {} } });

/** WebAuthn options for the browser, as @simplewebauthn/server makes them. */
export const webauthnOptions = <T>() => z.custom<T>((v) => v !== null && typeof v === 'object');

export const passkeyListProcedure = humanProcedure
  .input(z.strictObject({}).optional())
  .output(
    z.object({
      passkeys: z.array(z.object({ id: z.uuid(), name: z.string(), created_at: timestamp(), last_used_at: timestamp().nullable() })),
    }),
  )
  .query(async ({ ctx }) => {
    const rows = await ctx.runtime.db
      .select()
      .from(passkeys)
      .where(eq(passkeys.userId, ctx.principal.userId))
      .orderBy(asc(passkeys.createdAt));
    return {
      passkeys: rows.map((p) => ({
        id: p.id,
        name: p.name,
        created_at: p.createdAt.toISOString(),
        last_used_at: p.lastUsedAt?.toISOString() ?? null,
      })),
    };
  });

export const passkeyOptionsProcedure = humanProcedure
  .input(z.strictObject({}).optional())
  .output(z.object({ challenge_id: z.uuid(), options: webauthnOptions<PublicKeyCredentialCreationOptionsJSON>() }))
  .mutation(({ ctx }) =>
    ctx.runtime.db.transaction((tx) => registrationOptions(tx, ctx.principal.userId, relyingParty(ctx.runtime.env.APP_URL))),
  );

/** Signing in with a passkey: a stateless challenge (nothing is written until it is answered). */
export const passkeySignInOptionsProcedure = publicProcedure
  .input(z.strictObject({}).optional())
  .output(z.object({ options: webauthnOptions<PublicKeyCredentialRequestOptionsJSON>() }))
  .mutation(async ({ ctx }) => ({ options: await signInOptions(ctx.runtime.secrets.auth, relyingParty(ctx.runtime.env.APP_URL)) }));

/**
 * Adding a passkey asks for the current password (under the account's sign-in limit, as changing it
 * does): a passkey outlives every session, so a stolen session must not be able to add one.
 */
export const addPasskeyProcedure = humanProcedure
  .input(
    z.strictObject({
      challenge_id: id(),
      response: webauthnAnswer<RegistrationResponseJSON>(),
      name: text(1, 100).optional(),
      current_password: password,
    }),
  )
  .output(z.object({ id: z.uuid(), name: z.string() }))
  .mutation(async ({ ctx, input }) => {
    const { db } = ctx.runtime;
    const bucket = accountBucket(ctx.principal.email);
    const verdict = await countAttempt(db, [bucket], attemptLimitsOf(ctx.runtime));
    if (!verdict.allowed) throw tooManyAttempts(verdict, 'password attempts');
    await checkCurrentPassword(db, ctx.principal.userId, input.current_password, 'current_password');
    await settleSuccess(db, [bucket], []);
    const row = await db.transaction((tx) => addPasskey(tx, ctx.principal.userId, ctx.trace, input, relyingParty(ctx.runtime.env.APP_URL)));
    return { id: row.id, name: row.name };
  });

/** Removing one of one's passkeys (one added by someone who held the session, say): a `passkey.removed` event. */
export const removePasskeyProcedure = humanProcedure
  .input(z.strictObject({ id: id() }))
  .output(z.object({ removed: z.boolean() }))
  .mutation(async ({ ctx, input }) => ({
    removed: await ctx.runtime.db.transaction((tx) => removePasskey(tx, ctx.principal.userId, ctx.trace, input.id)),
  }));
