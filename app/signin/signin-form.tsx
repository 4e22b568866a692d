'use client';
import { startAuthentication } from '@simplewebauthn/browser';
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { trpc } from '../_lib/trpc-client';

type AuthenticationOptions = Parameters<typeof startAuthentication>[0]['optionsJSON'];

export function SignInForm({ returnTo }: { returnTo: string }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function withPasskey() {
    setBusy(true);
    setError(null);
    try {
      const { options } = await trpc.account.passkeySignInOptions.mutate();
      // tRPC's inferred JSON type of the options loses their exact shape; they are what the server library made.
      const answer = await startAuthentication({ optionsJSON: options as unknown as AuthenticationOptions });
      const result = await signIn('passkey', { response: JSON.stringify(answer), redirect: false });
      if (!result || result.error) {
        setError(
          !result || result.error === 'CredentialsSignin' ? 'That passkey did not sign you in. Use your email and password.' : result.error,
        );
        return;
      }
      router.replace(returnTo);
      router.refresh();
    } catch {
      setError('No passkey was used. Use your email and password, or try again.');
    } finally {
      setBusy(false);
    }
  }

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(null);
    const result = await signIn('credentials', {
      email: String(form.get('email') ?? ''),
      password: String(form.get('password') ?? ''),
      redirect: false,
    });
    setBusy(false);
    if (!result || result.error) {
      // CredentialsSignin: no such pair. Anything else is the service's own sentence (too many attempts).
      setError(!result || result.error === 'CredentialsSignin' ? 'That email and password do not match an account.' : result.error);
      return;
    }
    router.replace(returnTo);
    router.refresh();
  }

  return (
    <form className="stack" onSubmit={onSubmit} aria-describedby={error ? 'signin-error' : undefined}>
      <label>
        Email
        <input name="email" type="email" autoComplete="username" required autoFocus />
      </label>
      <label>
        Password
        <input name="password" type="password" autoComplete="current-password" required />
      </label>
      {error && (
        <p id="signin-error" role="alert" className="error">
          {error}
        </p>
      )}
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
      <button type="button" disabled={busy} onClick={() => void withPasskey()}>
        Use a passkey
      </button>
    </form>
  );
}
