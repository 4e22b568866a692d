/**
 * npm run key:create -- --workspace <name|id> [--name <label>]
 * Creates an API key for the workspace and prints it once (only its hash is stored).
 */
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { cliActor, findWorkspace } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'key:create',
  summary: 'creates an API key for a workspace and prints it once (only its hash is stored).',
  usage: ['--workspace <name|id> [--name <label>]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the workspace the key acts in', required: true },
    name: { type: 'string', value: '<label>', description: 'a label to tell the key by', default: 'cli key' },
  },
} as const;

export default dbTool({
  spec: cli,
  async run({ db }, values, io) {
    const workspace = await findWorkspace(db, values.workspace!);
    const key = await db.transaction((tx) => createApiKey(tx, cliActor('key-create', workspace), { name: values.name }));
    io.log(`API key for workspace ${workspace.name} (${workspace.id}), id ${key.id}. Shown once:`);
    io.log(key.secret);
    return 0;
  },
});
