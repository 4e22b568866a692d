import { describe, expect, it } from 'vitest';
import { EVENT_TEXT_COLUMNS, eventRowsOfCopyText, ledgerEventOfRow } from './event-rows';

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
});
