/**
 * npm run user:add -- --workspace <name|id> --email <email> --role <owner|approver|viewer> [--name "Full Name"]
 * Adds a human to a workspace. A new user gets a generated password, printed once.
 */
import { parseArgs } from 'node:util';
import { membershipRoles, type MembershipRole } from '@/db/schema';
import { generatePassword, hashPassword } from '@/server/auth/passwords';
import { addMember } from '@/server/domain/workspaces/members';
import { cliActor, fail, findWorkspace, withRuntime } from './cli';

const { values } = parseArgs({
  options: { workspace: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' } },
  strict: true,
});
const role = values.role as MembershipRole | undefined;
if (!values.workspace || !values.email || !role || !membershipRoles.includes(role) || !/^[^@\s]+@[^@\s]+$/.test(values.email)) {
  fail('Usage: npm run user:add -- --workspace <name|id> --email <email> --role <owner|approver|viewer> [--name "Full Name"]');
}

await withRuntime(async ({ db, wakeups }) => {
  const workspace = await findWorkspace(db, values.workspace!);
  const password = generatePassword();
  const result = await db.transaction(async (tx) =>
    addMember(tx, cliActor('user-add', workspace), {
      email: values.email!,
      displayName: values.name ?? values.email!.split('@')[0]!,
      passwordHash: await hashPassword(password),
      role: role!,
    }),
  );
  wakeups.committed(workspace.id);
  console.log(`${values.email} is now ${role} of ${workspace.name}.`);
  if (result.userCreated) console.log(`Password (shown once): ${password}`);
  else console.log('They already had an account and keep their password.');
  return 0;
});
