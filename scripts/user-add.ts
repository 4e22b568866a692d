/**
 * npm run user:add -- --workspace <name|id> --email <email> --role <owner|approver|viewer> [--name "Full Name"]
 * Adds a human to a workspace. A new user gets a generated password, printed once.
 */
import { membershipRoles, type MembershipRole } from '@/db/schema';
import { generatePassword, hashPassword } from '@/server/auth/passwords';
import { addMember } from '@/server/domain/workspaces/members';
import { cliActor, findWorkspace, usageError } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'user:add',
  summary: 'adds a person to a workspace with a role; a new account gets a password, printed once.',
  usage: ['--workspace <name|id> --email <email> --role <owner|approver|viewer> [--name "Full Name"]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'the workspace to join', required: true },
    email: { type: 'string', value: '<email>', description: 'their sign-in email', required: true },
    role: {
      type: 'string',
      value: '<owner|approver|viewer>',
      description: 'owner: everything; approver: rules on decisions; viewer: reads',
      required: true,
    },
    name: { type: 'string', value: '"Full Name"', description: 'the name shown for them (default: the part of the email before @)' },
  },
} as const;

export default dbTool({
  spec: cli,
  prepare(values) {
    if (!membershipRoles.includes(values.role as MembershipRole)) usageError(cli, `--role is one of ${membershipRoles.join(', ')}`);
    if (!/^[^@\s]+@[^@\s]+$/.test(values.email!)) usageError(cli, '--email must be an email address');
    return values;
  },
  async run({ db }, values, io) {
    const role = values.role as MembershipRole;
    const workspace = await findWorkspace(db, values.workspace!);
    const password = generatePassword();
    const result = await db.transaction(async (tx) =>
      addMember(tx, cliActor('user-add', workspace), {
        email: values.email!,
        displayName: values.name ?? values.email!.split('@')[0]!,
        passwordHash: await hashPassword(password),
        role,
      }),
    );
    io.log(`${values.email} is now ${role} of ${workspace.name}.`);
    if (result.userCreated) io.log(`Password (shown once): ${password}`);
    else io.log('They already had an account and keep their password.');
    return 0;
  },
});
