/**
 * npm run workspace:create -- --name <name> --owner-email <email> [--owner-name "Full Name"] [--with-key]
 * Creates a workspace (its ledger, its Inbox, its owner's membership). An owner new to the
 * installation gets an account with a one-time password, printed once; --with-key also prints an
 * API key for the workspace, once. Only hashes are stored.
 */
import { randomUUID } from 'node:crypto';
import { generatePassword, hashPassword } from '@/server/auth/passwords';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { createWorkspace } from '@/server/domain/workspaces/create-workspace';
import { AppError } from '@/server/errors';
import { fail, usageError } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'workspace:create',
  summary: 'creates a workspace with its owner (a new account gets a one-time password) and, with --with-key, an API key.',
  usage: ['--name <name> --owner-email <email> [--owner-name "Full Name"] [--with-key]'],
  options: {
    name: {
      type: 'string',
      value: '<name>',
      description: 'the workspace name: 1 to 100 characters, unique whatever the case',
      required: true,
    },
    'owner-email': {
      type: 'string',
      value: '<email>',
      description: 'the owner’s sign-in email (an account is made if it is new)',
      required: true,
    },
    'owner-name': {
      type: 'string',
      value: '"Full Name"',
      description: 'the name shown for a new owner (default: the part of the email before @)',
    },
    'with-key': { type: 'boolean', description: 'also create an API key for the workspace and print it once' },
  },
} as const;
export default dbTool({
  spec: cli,
  prepare(values) {
    const email = values['owner-email']!.trim();
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) usageError(cli, '--owner-email must be an email address');
    return { ...values, email };
  },
  async run({ db }, values, io) {
    const { email } = values;
    const password = generatePassword();
    const passwordHash = await hashPassword(password);
    let result;
    try {
      result = await db.transaction(async (tx) => {
        const trace = systemTrace(randomUUID());
        const created = await createWorkspace(tx, trace, {
          name: values.name!,
          owner: { email, displayName: values['owner-name'] ?? email.split('@')[0]!, passwordHash },
        });
        const actor: Actor = {
          type: 'system',
          id: 'system:cli:workspace-create',
          ownerId: created.ownerUserId,
          workspaceId: created.workspaceId,
          trace,
        };
        const key = values['with-key'] ? await createApiKey(tx, actor, { name: 'workspace:create key' }) : null;
        return { created, key };
      });
    } catch (err) {
      if (err instanceof AppError) fail(err.message);
      throw err;
    }
    const { created, key } = result;
    io.log(`Workspace ${created.name} created (${created.workspaceId}). Shown once, only hashes are kept:`);
    io.log(
      `  owner      ${email.toLowerCase()}${created.ownerCreated ? `  password ${password}` : '  (existing account: keeps its password)'}`,
    );
    if (key) io.log(`  API key    ${key.secret}`);
    io.log(`  workspace  ${created.workspaceId}`);
    return 0;
  },
});
