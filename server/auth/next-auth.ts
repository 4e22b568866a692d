/**
 * next-auth configuration: email + password (argon2id) or passkey sign-in, JWT sessions in a cookie. The
 * session carries only the user id; roles are read from the database on every request.
 */
import type { NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import type { Runtime } from '@/server/runtime';
import { AppError } from '@/server/errors';
import { describeError, log } from '@/server/log';
import { endSessions, SESSION_MAX_AGE_SECONDS } from './session';
import { checkSignIn } from './sign-in';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { checkPasskeySignIn } from '@/server/domain/passkeys/sign-in';
import { relyingParty } from '@/server/domain/passkeys/relying-party';
import { countRefusal } from '@/server/metrics';

export function authOptions(runtime: Runtime): NextAuthOptions {
  return {
    secret: runtime.secrets.auth,
    session: { strategy: 'jwt', maxAge: SESSION_MAX_AGE_SECONDS },
    pages: { signIn: '/signin' },
    providers: [
      CredentialsProvider({
        name: 'Email and password',
        credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
        async authorize(credentials, req) {
          const headers = new Headers();
          for (const [name, value] of Object.entries(req?.headers ?? {})) if (typeof value === 'string') headers.set(name, value);
          try {
            return await checkSignIn(runtime, String(credentials?.email ?? ''), String(credentials?.password ?? ''), headers);
          } catch (err) {
            // next-auth hands a thrown message to the sign-in page: only ours may reach it.
            if (err instanceof AppError) throw new Error(err.message);
            log('error', 'sign-in failed', { error: describeError(err) });
            throw new Error('Signing in is not possible right now. Try again in a moment.');
          }
        },
      }),
      // A passkey: the answer to a sign-in challenge (server/domain/passkeys/sign-in.ts), as JSON.
      CredentialsProvider({
        id: 'passkey',
        name: 'Passkey',
        credentials: { response: { label: 'Passkey answer', type: 'text' } },
        async authorize(credentials) {
          const text = String(credentials?.response ?? '');
          if (text.length === 0 || text.length > 64 * 1024) return null;
          let response: AuthenticationResponseJSON;
          try {
            response = JSON.parse(text) as AuthenticationResponseJSON;
          } catch {
            return null;
          }
          if (typeof response?.response?.clientDataJSON !== 'string') return null;
          try {
            const user = await checkPasskeySignIn(runtime.db, runtime.secrets.auth, response, relyingParty(runtime.env.APP_URL));
            if (!user) countRefusal('sign_in_failed');
            return user;
          } catch (err) {
            log('error', 'passkey sign-in failed', { error: describeError(err) });
            throw new Error('Signing in is not possible right now. Try again in a moment.');
          }
        },
      }),
    ],
    events: {
      // A signed-out session must not come back from a copied cookie.
      async signOut({ token }) {
        if (token?.sub) await endSessions(runtime.db, token.sub);
      },
    },
    callbacks: {
      jwt({ token, user }) {
        if (user) {
          token.sub = user.id;
          token.epoch = (user as { epoch?: number }).epoch ?? 0;
        }
        return token;
      },
      session({ session, token }) {
        return { ...session, user: { ...session.user, id: token.sub } };
      },
    },
  };
}
