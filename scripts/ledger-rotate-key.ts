/**
 * npm run ledger:rotate-key -- --workspace <name|id>
 * Gives the workspace a new checkpoint signing key: the current one is retired (it stays listed by
 * GET /ledger/keys) and a `ledger.key_added` event names the new one. Checkpoints from then on are
 * signed with the new key; witnesses that pinned the old one must be told the new vkey.
 */
import { addSigningKey } from '@/server/ledger/checkpoints';
import { vkeyOf } from '@/server/ledger/note';
import { signingOf } from '@/server/runtime';
import { findWorkspace } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'ledger:rotate-key',
  summary: 'gives a workspace a new checkpoint signing key, retiring the current one.',
  usage: ['--workspace <name|id>'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the workspace whose key to rotate', required: true },
  },
} as const;

export default dbTool({
  spec: cli,
  async run(runtime, values, io) {
    const workspace = await findWorkspace(runtime.db, values.workspace!);
    const key = await runtime.db.transaction((tx) => addSigningKey(tx, workspace.id, signingOf(runtime)));
    io.log(`New checkpoint signing key for ${workspace.name}: ${vkeyOf(key)}`);
    return 0;
  },
});
