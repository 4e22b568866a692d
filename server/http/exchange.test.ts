// webStreamOf: a pushed body (an event-stream lease) as a web ReadableStream, the form `npm run dev`
// answers with (server/http/fetch-api.ts). Its backpressure is what keeps a slow reader from being
// buffered for; the node path (scripts/serve.mjs) is tested over a socket in event-stream.int.test.ts.
import { describe, expect, it } from 'vitest';
import { webStreamOf, type ChunkSink, type PushedBody } from './exchange';

/**
 * A body that writes numbered one-byte chunks while the sink takes them (up to 1,000), and again each
 * time it drains.
 */
function writer() {
  const state = { sink: null as ChunkSink | null, written: 0, refusals: 0, cancelled: false };
  const fill = () => {
    while (state.written < 1000) {
      const taken = state.sink!.write(new Uint8Array([state.written++ % 256]));
      if (!taken) {
        state.refusals++;
        state.sink!.drained(fill);
        return;
      }
    }
  };
  const body: PushedBody = {
    start(sink) {
      state.sink = sink;
      fill();
    },
    cancel() {
      state.cancelled = true;
    },
  };
  return { body, state };
}

describe('webStreamOf', () => {
  it('tells the writer to stop once 16 chunks wait unread, and lets it go on when the reader takes them', async () => {
    const { body, state } = writer();
    const reader = webStreamOf(body).getReader();
    // Nothing read yet: the writer stopped at the stream's high-water mark and waits to be drained.
    expect(state.written).toBe(16);
    expect(state.refusals).toBe(1);

    // Each chunk read makes room for one more: the writer goes on where it stopped, in order.
    for (let i = 0; i < 40; i++) expect((await reader.read()).value).toEqual(new Uint8Array([i]));
    expect(state.refusals).toBeGreaterThan(1);
    expect(state.written).toBeLessThanOrEqual(40 + 16);
    await reader.cancel();
    expect(state.cancelled).toBe(true);
  });

  it('ends the stream when the body ends, and writes after the reader left are dropped', async () => {
    let sink: ChunkSink | null = null;
    const stream = webStreamOf({ start: (s) => (sink = s), cancel: () => undefined });
    const reader = stream.getReader();
    expect(sink!.write(new Uint8Array([1]))).toBe(true);
    sink!.end();
    expect((await reader.read()).value).toEqual(new Uint8Array([1]));
    expect((await reader.read()).done).toBe(true);

    let late: ChunkSink | null = null;
    const left = webStreamOf({ start: (s) => (late = s), cancel: () => undefined }).getReader();
    await left.cancel();
    // The writer is not told to stop for a reader that is gone: it ends on its cancel instead.
    expect(late!.write(new Uint8Array([2]))).toBe(true);
  });
});
