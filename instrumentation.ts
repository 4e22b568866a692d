/**
 * Next.js calls register() once when it starts, before it serves requests: under `npm run dev`
 * the database is opened and migrated and the demo workspace seeded here, not on the first
 * request. Under scripts/serve.mjs the service has started before Next is loaded, and boot()
 * finds it (server/boot.ts keeps it on globalThis).
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  const { boot } = await import('./server/boot');
  await boot();
}
