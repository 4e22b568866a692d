/**
 * npm run key:revoke -- --workspace <name|id> --id <key id>
 * npm run key:revoke -- --key <the key itself>
 * Revokes an API key; requests with it are refused (401) from then on.
 */
import { parseArgs } from 'node:util';
import { eq } from 'drizzle-orm';
import { apiKeys, workspaces } from '@/db/schema';
import { hashApiKey } from '@/server/auth/api-keys';
import { revokeApiKey } from '@/server/domain/api-keys/api-keys';
import { cliActor, fail, findWorkspace, withRuntime } from './cli';

const { values } = parseArgs({
  options: { workspace: { type: 'string' }, id: { type: 'string' }, key: { type: 'string' } },
  strict: true,
});
if (!values.key && !(values.workspace && values.id)) {
  fail('Usage: npm run key:revoke -- --workspace <name|id> --id <key id>   or   npm run key:revoke -- --key <key>');
}

await withRuntime(async ({ db, wakeups }) => {
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
  // A running server's open leases of this key end now (NOTIFY, sent before the runtime closes).
  if (result.revoked) wakeups.committed(workspace.id);
  console.log(result.revoked ? `Revoked key ${keyId}.` : `Key ${keyId} was already revoked.`);
  return 0;
});
