import { describe, expect, it } from 'vitest';
import { sealedChain as chain } from '@/test/support/chain';
import { eventHashOf, type LedgerEvent } from './canonical';
import { ChainVerifier } from './chain';

function verify(events: LedgerEvent[], head?: { sequence: number; headHash: string }) {
  const v = new ChainVerifier();
  for (const e of events) if (!v.push(e)) break;
  return v.finish(head);
}

describe('ChainVerifier', () => {
  it('accepts an intact chain and its head', () => {
    const events = chain(5);
    const report = verify(events, { sequence: 5, headHash: events[4]!.eventHash });
    expect(report).toMatchObject({
      verified: true,
      checkedEvents: 5,
      lastVerified: { sequence: 5, hash: events[4]!.eventHash },
      firstBreak: null,
    });
  });

  it('names the sequence of an edited payload', () => {
    const events = chain(5);
    events[2] = { ...events[2]!, payload: { n: 3, text: 'rewritten' } };
    expect(verify(events).firstBreak).toMatchObject({ sequence: 3, reason: 'payload_digest_mismatch' });
  });

  it('names the sequence whose hash no longer matches its fields', () => {
    const events = chain(5);
    events[3] = { ...events[3]!, actorId: 'someone-else' };
    expect(verify(events).firstBreak).toMatchObject({ sequence: 4, reason: 'event_hash_mismatch' });
  });

  it('detects a rewritten event whose own hash was recomputed (the next link breaks)', () => {
    const events = chain(5);
    const edited = { ...events[1]!, actorId: 'forger' };
    events[1] = { ...edited, eventHash: eventHashOf(edited) };
    expect(verify(events).firstBreak).toMatchObject({ sequence: 3, reason: 'previous_hash_mismatch' });
  });

  it('detects a missing event', () => {
    const events = chain(5);
    events.splice(2, 1);
    expect(verify(events).firstBreak).toMatchObject({ sequence: 4, reason: 'sequence_gap', expected: '3' });
  });

  it('detects a truncated tail through the head', () => {
    const events = chain(5);
    const head = { sequence: 5, headHash: events[4]!.eventHash };
    expect(verify(events.slice(0, 4), head).firstBreak).toMatchObject({ reason: 'head_mismatch' });
  });
});
