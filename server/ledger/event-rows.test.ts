import { describe, expect, it } from 'vitest';
import { canonicalJson, eventCanonicalText } from './canonical';
import {
  canonicalTextOfRow,
  EVENT_TEXT_COLUMNS,
  eventRowsOfCopyText,
  ledgerEventOfRow,
  payloadTextOfRow,
  type EventTextRow,
} from './event-rows';

/** A COPY text line of EVENT_TEXT_COLUMNS, each value as given (already escaped). */
const line = (values: Record<string, string>) => EVENT_TEXT_COLUMNS.map((c) => values[c] ?? `${c}-value`).join('\t') + '\n';

describe('event rows in COPY text format', () => {
  it('undoes every escape PostgreSQL writes, and reads \\N as NULL', () => {
    const text =
      line({
        sequence: '7',
        aggregate_version: '2',
        schema_version: '1',
        payload: '{"a": "x\\\\"y"}',
        actor_id: 'a\\tb\\nc\\rd\\\\e\\bf\\fg\\vh',
        idempotency_key: '\\N',
      }) + line({ sequence: '8', aggregate_version: '1', schema_version: '1', payload: '{}', idempotency_key: 'key \\\\N' });
    const rows = eventRowsOfCopyText(text);
    expect(rows).toHaveLength(2);
    expect(rows[0]!.actor_id).toBe('a\tb\nc\rd\\e\bf\fg\vh');
    expect(rows[0]!.idempotency_key).toBeNull();
    expect(rows[1]!.idempotency_key).toBe('key \\N');
    const event = ledgerEventOfRow(rows[0]!);
    expect(event).toMatchObject({ sequence: 7, aggregateVersion: 2, schemaVersion: 1, payload: { a: 'x"y' }, idempotencyKey: null });
  });

  it('refuses a row with a column too many or too few', () => {
    expect(() => eventRowsOfCopyText('a\tb\n')).toThrow(/columns/);
  });

  it('builds the canonical form from the columns exactly as the generic canonicalizer does from the event', () => {
    const base: EventTextRow = {
      id: '5f0c1d7e-8a6b-4c1d-9e2f-3a4b5c6d7e8f',
      workspace_id: '0b1c2d3e-4f50-4617-8283-949596979899',
      sequence: '12',
      owner_id: '1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d',
      aggregate_type: 'task',
      aggregate_id: '2b3c4d5e-6f70-4819-a2b3-c4d5e6f70819',
      aggregate_version: '3',
      event_type: 'task.updated',
      schema_version: '1',
      actor_type: 'api_key',
      actor_id: '9c8b7a6d-5e4f-4321-8fed-cba987654321',
      payload: '{"b":1,"a":"x"}',
      payload_canonical: 'f',
      payload_digest: 'sha256:' + 'ab'.repeat(32),
      occurred_at: '2026-11-27T03:15:11.949Z',
      idempotency_key: null,
      causation_id: '3c4d5e6f-7081-492a-b3c4-d5e6f708192a',
      correlation_id: '4d5e6f70-8192-4a3b-84d5-e6f708192a3b',
      context_manifest_digest: 'sha256:' + 'cd'.repeat(32),
      previous_hash: 'sha256:' + 'ef'.repeat(32),
      event_hash: 'sha256:' + '01'.repeat(32),
    };
    const awkward = 'quote " backslash \\ tab \t newline \n nul \u0000 lone \ud800 emoji 😀 é';
    const rows: EventTextRow[] = [
      base,
      { ...base, payload_canonical: true, payload: canonicalJson({ z: [1, 2.5, null], a: { y: true, b: 'é' } }) },
      { ...base, idempotency_key: 'key "with" quotes', actor_id: awkward, actor_type: 'human', sequence: 9007199254740991 },
      { ...base, payload: '{"n": 1e2, "s": "\\u00e9", "k": {"b": [], "a": {}}}', aggregate_version: 1 },
    ];
    for (const row of rows) {
      const text = payloadTextOfRow(row);
      expect(canonicalTextOfRow(row, text)).toBe(eventCanonicalText(ledgerEventOfRow(row), text));
      expect(text).toBe(canonicalJson(JSON.parse(row.payload)));
    }
  });
});
