/** The V8 flags the server runs with (scripts/server-flags.mjs says why). */
export function serverNodeFlags(env?: Record<string, string | undefined>): string[];
