/** A small valid receipt document, for tests and examples. */
import { randomUUID } from 'node:crypto';

const digest = `sha256:${'ab'.repeat(32)}`;
export function sampleReceipt(): Record<string, unknown> {
  return {
    schema_version: 'agent-work-receipt/v0.1',
    receipt_id: randomUUID(),
    workspace_id: randomUUID(),
    task: { id: randomUUID(), title: 'Summarise interviews', status: 'done' },
    summary: 'Summarised 10 interviews',
    status: 'completed',
    actor: { type: 'api_key', id: randomUUID() },
    created_at: '2026-11-23T10:00:00.000Z',
    evidence: [{ kind: 'file', uri: 'https://example.com/summary.md', digest }],
    events: [
      {
        id: randomUUID(),
        sequence: 7,
        eventType: 'work.created',
        aggregateId: randomUUID(),
        occurredAt: '2026-11-23T10:00:00.000Z',
        payloadDigest: digest,
        previousHash: digest,
        eventHash: digest,
      },
    ],
    rulings: [],
  };
}
