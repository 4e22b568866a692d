/**
 * npm run key:revoke -- --workspace <name|id> --id <key id>
 * npm run key:revoke -- --key <the key itself>
 * Revokes an API key; requests with it are refused (401) from then on.
 */
import { eq } from 'drizzle-orm';
import { apiKeys, workspaces } from '@/db/schema';
import { hashApiKey } from '@/server/auth/api-keys';
import { revokeApiKey } from '@/server/domain/api-keys/api-keys';
import { cliActor, fail, findWorkspace, parseCli, usageError, withRuntime } from './cli';

const cli = {
  command: 'key:revoke',
  summary: 'revokes an API key; requests with it are refused (401) from then on.',
  usage: ['--workspace <name|id> --id <key id>', '--key <the key itself>'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the key’s workspace (with --id)' },
    id: { type: 'string', value: '<key id>', description: 'the key’s id, as key:create and the API keys page show it' },
    key: { type: 'string', value: '<awk_…>', description: 'the key itself, instead of --workspace and --id' },
  },
} as const;
const values = parseCli(cli);
if (!values.key && !(values.workspace && values.id)) usageError(cli, 'give --key, or --workspace and --id');
if (values.key && (values.workspace || values.id)) usageError(cli, 'give --key, or --workspace and --id, not both');

await withRuntime(async ({ db }) => {
  let workspaceRef = values.workspace;
  let keyId = values.id;
  if (values.key) {
    const [row] = await db
      .select({ id: apiKeys.id, workspaceId: apiKeys.workspaceId, name: workspaces.name })
      .from(apiKeys)
      .innerJoin(workspaces, eq(workspaces.id, apiKeys.workspaceId))
      .where(eq(apiKeys.secretHash, hashApiKey(values.key)));
    if (!row) fail('No such API key.');
    workspaceRef = row.workspaceId;
    keyId = row.id;
  }
  const workspace = await findWorkspace(db, workspaceRef!);
  const result = await db.transaction((tx) => revokeApiKey(tx, cliActor('key-revoke', workspace), { keyId: keyId! }));
  console.log(result.revoked ? `Revoked key ${keyId}.` : `Key ${keyId} was already revoked.`);
  return 0;
});
