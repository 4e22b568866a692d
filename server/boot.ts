/**
 * Service start (called once from instrumentation.ts): open and migrate the database, create the
 * demo workspace on first start, print what a newcomer needs, and close cleanly on shutdown.
 */
import { seedDemoIfEmpty, type DemoWorkspace } from './domain/workspaces/seed-demo';
import { issueSetupToken, SETUP_TTL_HOURS } from './domain/workspaces/setup';
import { startBackgroundJobs } from './jobs';
import { onStop, stopOnSignals } from './shutdown';
import { log, redactDatabaseErrorsInConsole } from './log';
import { closeRuntime, getRuntime, type Runtime } from './runtime';
import { measurePoolWith } from './metrics';

const booted = Symbol.for('accountable-work-service.boot');
type GlobalWithBoot = typeof globalThis & { [booted]?: Promise<Runtime> };

/**
 * Starts the service once per process, however often it is called: Next.js calls it through
 * instrumentation.ts without waiting for it, and scripts/serve.mjs (handed it by instrumentation.ts)
 * waits for it before it says the service is ready.
 */
export function boot(): Promise<Runtime> {
  const g = globalThis as GlobalWithBoot;
  g[booted] ??= start();
  return g[booted];
}

async function start(): Promise<Runtime> {
  // What Next prints of a page that failed goes through the log's rules for database errors.
  redactDatabaseErrorsInConsole();
  const runtime = await getRuntime();
  // next-auth builds its callback URLs and picks its cookie names from NEXTAUTH_URL; it must be
  // the address humans use, which is APP_URL.
  process.env.NEXTAUTH_URL = runtime.env.APP_URL;
  if (runtime.env.SEED_DEMO) {
    const demo = await seedDemoIfEmpty(runtime.db);
    if (demo) printDemo(demo, runtime.env.APP_URL);
  } else {
    // No demo, and nobody can sign in yet: the one way in is a setup link, printed here only.
    const token = await issueSetupToken(runtime.db);
    if (token) printSetup(token, runtime.env.APP_URL);
  }
  if (runtime.poolStats) measurePoolWith(runtime.poolStats);
  const stopJobs = startBackgroundJobs(runtime);
  // Once requests have drained (server/shutdown.ts): nothing is writing when the database closes.
  onStop('resources', async () => {
    await stopJobs();
    await closeRuntime();
  });
  stopOnSignals();
  log('info', 'ready', {
    engine: runtime.engine,
    database: runtime.engine === 'pglite' ? runtime.env.PGLITE_DATA_DIR : 'DATABASE_URL',
    appUrl: runtime.env.APP_URL,
  });
  return runtime;
}

function printDemo(demo: DemoWorkspace, appUrl: string): void {
  const lines = [
    '',
    '  Demo workspace created (shown once; only hashes are stored):',
    `    workspace   ${demo.workspaceName} (${demo.workspaceId})`,
    `    API key     ${demo.apiKey}`,
    `    sign in     ${appUrl}/signin  as ${demo.ownerEmail} / ${demo.ownerPassword}`,
    '',
    '  Try it:',
    `    curl -s -X POST ${appUrl}/api/v1/work -H "Authorization: Bearer ${demo.apiKey}" \\`,
    `      -H "Content-Type: application/json" -d '{"title":"My first task"}'`,
    `    curl -s ${appUrl}/api/v1/events/stream -H "Authorization: Bearer ${demo.apiKey}"`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

function printSetup(token: string, appUrl: string): void {
  const lines = [
    '',
    '  No account exists yet. Open this one-time link to create the first account and workspace',
    `  (it works once, for ${SETUP_TTL_HOURS} hours; each start while nobody has signed up prints a new one):`,
    `    ${new URL(`/setup?token=${token}`, appUrl).toString()}`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}
