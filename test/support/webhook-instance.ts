/**
 * One more instance of the service's webhook delivery, as its own process, for tests that kill an
 * instance mid-delivery: opens the database named by DATABASE_URL (with the process environment's
 * settings) and runs the dispatcher the service runs until it is killed. Prints "ready" once started.
 */
import { parseEnv } from '@/server/env';
import { createRuntime } from '@/server/runtime';
import { WebhookDispatcher } from '@/server/webhooks/dispatcher';

const runtime = await createRuntime(parseEnv(process.env));
new WebhookDispatcher(runtime, { pollMs: 50 }).start();
process.stdout.write('ready\n');
