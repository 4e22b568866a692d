/**
 * next-auth configuration: email + password (argon2id) sign-in, JWT sessions in a cookie. The
 * session carries only the user id; roles are read from the database on every request.
 */
import type { NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { eq } from 'drizzle-orm';
import { users } from '@/db/schema';
import type { Runtime } from '@/server/runtime';
import { randomBytes } from 'node:crypto';
import { hashPassword, verifyPassword } from './passwords';
import { endSessions, SESSION_MAX_AGE_SECONDS } from './session';

// Verifying against a real hash when the email is unknown keeps both paths equally slow, so timing
// does not tell which emails have accounts.
let dummyHash: Promise<string> | undefined;
const dummy = () => (dummyHash ??= hashPassword(randomBytes(16).toString('hex')));

export function authOptions(runtime: Runtime): NextAuthOptions {
  return {
    secret: runtime.secrets.auth,
    session: { strategy: 'jwt', maxAge: SESSION_MAX_AGE_SECONDS },
    pages: { signIn: '/signin' },
    providers: [
      CredentialsProvider({
        name: 'Email and password',
        credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
        async authorize(credentials) {
          const email = String(credentials?.email ?? '')
            .trim()
            .toLowerCase();
          const password = String(credentials?.password ?? '');
          if (!email || !password || email.length > 320 || password.length > 1024) return null;
          const [user] = await runtime.db
            .select({ id: users.id, email: users.email, name: users.displayName, hash: users.passwordHash, epoch: users.sessionEpoch })
            .from(users)
            .where(eq(users.email, email));
          const ok = await verifyPassword(user?.hash ?? (await dummy()), password);
          if (!user || !ok) return null;
          return { id: user.id, email: user.email, name: user.name, epoch: user.epoch };
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
