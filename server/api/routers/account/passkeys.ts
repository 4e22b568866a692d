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
import { addPasskey, registrationOptions } from '@/server/domain/passkeys/register';
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

export const addPasskeyProcedure = humanProcedure
  .input(
    z.strictObject({
      challenge_id: id(),
      response: webauthnAnswer<RegistrationResponseJSON>(),
      name: text(1, 100).optional(),
    }),
  )
  .output(z.object({ id: z.uuid(), name: z.string() }))
  .mutation(async ({ ctx, input }) => {
    const row = await ctx.runtime.db.transaction((tx) =>
      addPasskey(tx, ctx.principal.userId, ctx.trace, input, relyingParty(ctx.runtime.env.APP_URL)),
    );
    return { id: row.id, name: row.name };
  });
