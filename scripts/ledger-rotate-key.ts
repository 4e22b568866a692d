/**
 * npm run ledger:rotate-key -- --workspace <name|id> [--grants]
 * Gives the workspace a new checkpoint signing key: the current one is retired (it stays listed by
 * GET /ledger/keys) and a `ledger.key_added` event names the new one. Checkpoints from then on are
 * signed with the new key; witnesses that pinned the old one must be told the new vkey.
 *
 * With --grants, gives it a new grant key instead: grants from then on are signed with it, and the
 * retired one stays in the workspace's JWKS as long as a grant it signed may live, so tool servers
 * that fetch the JWKS keep verifying old and new grants alike.
 */
import { addSigningKey } from '@/server/ledger/checkpoints';
import { vkeyOf } from '@/server/ledger/note';
import { rotateGrantKey } from '@/server/keys/grant-keys';
import { signingOf } from '@/server/runtime';
import { findWorkspace } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'ledger:rotate-key',
  summary: 'gives a workspace a new checkpoint signing key (or, with --grants, grant key), retiring the current one.',
  usage: ['--workspace <name|id> [--grants]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the workspace whose key to rotate', required: true },
    grants: { type: 'boolean', description: 'rotate the key grant tokens are signed with, not the checkpoint key' },
  },
} as const;

export default dbTool({
  spec: cli,
  async run(runtime, values, io) {
    const workspace = await findWorkspace(runtime.db, values.workspace!);
    if (values.grants) {
      const { kid } = await runtime.db.transaction((tx) => rotateGrantKey(tx, workspace.id, signingOf(runtime)));
      io.log(`New grant signing key for ${workspace.name}: kid ${kid}`);
      return 0;
    }
    const key = await runtime.db.transaction((tx) => addSigningKey(tx, workspace.id, signingOf(runtime)));
    io.log(`New checkpoint signing key for ${workspace.name}: ${vkeyOf(key)}`);
    return 0;
  },
});
