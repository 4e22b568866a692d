/**
 * Next.js calls register() once when the server starts, before it serves requests: the database
 * is opened and migrated and the demo workspace seeded here, not on the first request.
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  const { boot } = await import('./server/boot');
  await boot();
}
