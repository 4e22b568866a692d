/** Human passwords: argon2id hashes (PHC strings) through @node-rs/argon2. */
import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { countPasswordHashing } from '@/server/metrics';

// Each is counted (aws_password_hashing_total): it costs a stranger nothing to ask for one, so the
// limits in front of them (sign-in, invitation and setup links) must refuse before they run.
export function hashPassword(password: string): Promise<string> {
  countPasswordHashing('hash');
  return hash(password);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  countPasswordHashing('verify');
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

/** A password for generated accounts (the demo owner): 20 characters, about 120 bits. */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}
