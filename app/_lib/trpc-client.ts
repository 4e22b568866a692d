'use client';
/** The browser's tRPC client for the internal endpoint; the session cookie travels with each call. */
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { AppRouter } from '@/server/api/root';

export const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: '/api/trpc' })] });

/** A message fit to show a person, from whatever a call threw. */
export function messageOf(err: unknown): string {
  if (err instanceof TRPCClientError) return err.message;
  return 'Something went wrong. Check your connection and try again.';
}
