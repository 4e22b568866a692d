/**
 * npm run key:create -- --workspace <name|id> [--name <label>]
 * Creates an API key for the workspace and prints it once (only its hash is stored).
 */
import { parseArgs } from 'node:util';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { cliActor, fail, findWorkspace, withRuntime } from './cli';

const { values } = parseArgs({
  options: { workspace: { type: 'string' }, name: { type: 'string', default: 'cli key' } },
  strict: true,
});
if (!values.workspace) fail('Usage: npm run key:create -- --workspace <name|id> [--name <label>]');

await withRuntime(async ({ db, wakeups }) => {
  const workspace = await findWorkspace(db, values.workspace!);
  const key = await db.transaction((tx) => createApiKey(tx, cliActor('key-create', workspace), { name: values.name! }));
  // Open event-stream leases of the workspace hear of it (NOTIFY, sent before the runtime closes).
  wakeups.committed(workspace.id);
  console.log(`API key for workspace ${workspace.name} (${workspace.id}), id ${key.id}. Shown once:`);
  console.log(key.secret);
  return 0;
});
