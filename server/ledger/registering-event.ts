/**
 * Joins each artifact to the ledger event that registered it (bundles and receipts name it). The
 * ledger's side of the join: the tables are db/schema's, so the ledger needs nothing of the domain.
 * A file of its own: receipts (served by the web app) use it, and the bundle code beside it
 * loads esbuild for its verification workers, which the app must not bundle.
 */
import { and, eq } from 'drizzle-orm';
import { artifacts, ledgerEvents } from '@/db/schema';

export const registeringEvent = and(
  eq(ledgerEvents.workspaceId, artifacts.workspaceId),
  eq(ledgerEvents.aggregateId, artifacts.id),
  eq(ledgerEvents.eventType, 'artifact.registered'),
)!;
