/**
 * npm run user:reset-password -- --email <email>
 * Gives an account a new one-time password, printed once, and ends every session it has: for an
 * operator helping someone who lost theirs. They change it at /settings/account after signing in.
 */
import { generatePassword } from '@/server/auth/passwords';
import { resetPassword } from '@/server/domain/accounts/accounts';
import { fail } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'user:reset-password',
  summary: 'gives an account a new password, printed once, and signs it out everywhere.',
  usage: ['--email <email>'],
  options: {
    email: { type: 'string', value: '<email>', description: 'the account’s sign-in email', required: true },
  },
} as const;

export default dbTool({
  spec: cli,
  async run({ db }, values, io) {
    const password = generatePassword();
    const done = await resetPassword(db, values.email!, password);
    if (!done) fail(`No account with the email ${JSON.stringify(values.email)}.`);
    io.log(`New password for ${values.email!.trim().toLowerCase()} (shown once; every session of theirs has ended):`);
    io.log(password);
    io.log('They can change it at /settings/account after signing in.');
    return 0;
  },
});
