/**
 * Writing what decide.ts answers: its changes as the decision's row update, the version moved on
 * by one per event of the decision (as the ledger's aggregate version moves).
 */
import { sql } from 'drizzle-orm';
import { decisions } from '@/db/schema';
import type { DecisionChanges } from './decide';

export function rowChanges({ versions, ...changes }: DecisionChanges) {
  return { ...changes, version: sql`${decisions.version} + ${versions}` };
}
