/** Well-formed ledger events built in memory, for tests of hashing and verification. */
import { randomUUID } from 'node:crypto';
import { GENESIS_HASH } from '@/db/schema';
import { BUNDLE_FORMAT, type LedgerBundle } from '@/server/ledger/bundle-shape';
import { digestOf, eventHashOf, type LedgerEvent } from '@/server/ledger/canonical';

/** A chain of `n` sealed events of one workspace, sequences 1..n. */
export function sealedChain(n: number): LedgerEvent[] {
  const workspaceId = randomUUID();
  const events: LedgerEvent[] = [];
  let previousHash = GENESIS_HASH;
  for (let sequence = 1; sequence <= n; sequence++) {
    const payload = { n: sequence, text: `event ${sequence}` };
    const unsealed = {
      id: randomUUID(),
      workspaceId,
      sequence,
      ownerId: randomUUID(),
      aggregateType: 'task',
      aggregateId: randomUUID(),
      aggregateVersion: 1,
      eventType: 'work.created',
      schemaVersion: 1,
      actorType: 'api_key' as const,
      actorId: randomUUID(),
      payload,
      payloadDigest: digestOf(payload),
      occurredAtCanonical: new Date(0).toISOString(),
      idempotencyKey: null,
      causationId: randomUUID(),
      correlationId: randomUUID(),
      contextManifestDigest: digestOf({}),
      previousHash,
    };
    const event = { ...unsealed, eventHash: eventHashOf(unsealed) };
    events.push(event);
    previousHash = event.eventHash;
  }
  return events;
}

/** A bundle of `events` (a sealed chain) from sequence `after` on, as ledger:export writes one. */
export function bundleOf(events: LedgerEvent[], after = 0, previous: LedgerBundle['previous'] = null): LedgerBundle {
  const last = events[events.length - 1]!;
  return {
    format: BUNDLE_FORMAT,
    workspaceId: last.workspaceId,
    exportedAt: new Date(0).toISOString(),
    from: after === 0 ? { sequence: 0, hash: GENESIS_HASH } : { sequence: after, hash: events[after - 1]!.eventHash },
    events: events.slice(after),
    head: { sequence: last.sequence, headHash: last.eventHash },
    previous,
  };
}
