/**
 * npm run key:revoke -- --workspace <name|id> --id <key id>
 * npm run key:revoke -- --key-file <file holding the key>   (`--key-file -`: from standard input)
 * Revokes an API key; requests with it are refused (401) from then on. The key itself is never
 * taken on the command line (scripts/cli.ts says why).
 */
import { eq } from 'drizzle-orm';
import { apiKeys, workspaces } from '@/db/schema';
import { hashApiKey } from '@/server/auth/api-keys';
import { revokeApiKey } from '@/server/domain/api-keys/api-keys';
import { cliActor, fail, findWorkspace, readApiKey, usageError } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'key:revoke',
  summary: 'revokes an API key; requests with it are refused (401) from then on.',
  usage: ['--workspace <name|id> --id <key id>', '--key-file <file holding the key, or - for standard input>'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the key’s workspace (with --id)' },
    id: { type: 'string', value: '<key id>', description: 'the key’s id, as key:create and the API keys page show it' },
    'key-file': {
      type: 'string',
      value: '<file|->',
      description: 'a file holding the key itself (- reads it from standard input), instead of --workspace and --id',
    },
  },
} as const;

export default dbTool({
  spec: cli,
  async prepare(values) {
    const byKey = values['key-file'] !== undefined;
    if (!byKey && !(values.workspace && values.id)) usageError(cli, 'give --key-file, or --workspace and --id');
    if (byKey && (values.workspace || values.id)) usageError(cli, 'give --key-file, or --workspace and --id, not both');
    // Only its hash crosses to the service.
    const keyHash = byKey ? hashApiKey(await readApiKey(cli, values['key-file'], { fromEnv: false })) : null;
    return { workspace: values.workspace, id: values.id, keyHash };
  },
  async run({ db }, input, io) {
    let workspaceRef = input.workspace;
    let keyId = input.id;
    if (input.keyHash) {
      const [row] = await db
        .select({ id: apiKeys.id, workspaceId: apiKeys.workspaceId, name: workspaces.name })
        .from(apiKeys)
        .innerJoin(workspaces, eq(workspaces.id, apiKeys.workspaceId))
        .where(eq(apiKeys.secretHash, input.keyHash));
      if (!row) fail('No such API key.');
      workspaceRef = row.workspaceId;
      keyId = row.id;
    }
    const workspace = await findWorkspace(db, workspaceRef!);
    const result = await db.transaction((tx) => revokeApiKey(tx, cliActor('key-revoke', workspace), { keyId: keyId! }));
    io.log(result.revoked ? `Revoked key ${keyId}.` : `Key ${keyId} was already revoked.`);
    return 0;
  },
});
