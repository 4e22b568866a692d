/**
 * How the patched driver (patches/README.md, change 8) puts a transaction's flight on the wire:
 * everything sent without waiting leaves in one socket write, and that write happens at the end of
 * the current tick, not a turn of the event loop later. The socket is the driver's own kind
 * (net.Socket), handed over through postgres.js's `socket` option so its writes can be counted.
 */
import net from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl } from '../support/engine';

const writes: Buffer[] = [];
let sql: postgres.Sql;

beforeAll(async () => {
  const url = new URL(adminUrl());
  // `socket` is a documented option that the package's types leave out.
  const options = {
    max: 1,
    onnotice: () => undefined,
    socket: () => {
      const socket = net.connect(Number(url.port || 5432), url.hostname);
      const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
      socket.write = ((chunk: Uint8Array | string, ...rest: unknown[]) => {
        writes.push(Buffer.from(chunk));
        return write(chunk, ...rest);
      }) as typeof socket.write;
      return socket;
    },
  } as postgres.Options<Record<string, never>>;
  sql = postgres(adminUrl(), options);
  await sql`select 1`; // the startup exchange is over: only the test's own writes follow
});
afterAll(async () => {
  await sql?.end({ timeout: 2 });
});

describe('the driver’s socket writes', () => {
  it('sends a pipelined flight in one write, even when a statement in it is larger than 1 KiB', async () => {
    const connection = await sql.reserve();
    try {
      writes.length = 0;
      // BEGIN, a statement carrying a large value (as the ledger append's events do), COMMIT:
      // sent without waiting for each other's answers. Upstream wrote the first two at once when
      // the buffer passed 1 KiB and COMMIT a turn later: two writes.
      const large = 'x'.repeat(4000);
      const [, [row]] = await Promise.all([
        connection.unsafe('begin').execute(),
        connection.unsafe(`select length('${large}') as n`).execute(),
        connection.unsafe('commit').execute(),
      ]);
      expect(row).toEqual({ n: 4000 });
      expect(writes).toHaveLength(1);
      expect(writes[0]!.toString('latin1')).toMatch(/begin.*select length.*commit/s);
    } finally {
      connection.release();
    }
  });

  it('writes before the event loop’s next turn: a setImmediate callback queued first already sees the bytes sent', async () => {
    writes.length = 0;
    const seen = new Promise<number>((resolve) => setImmediate(() => resolve(writes.length)));
    const answer = sql.unsafe('select 1 as one').execute();
    // Upstream deferred the write itself with setImmediate, behind this callback (and, on a busy
    // server, behind every other I/O callback of the turn).
    expect(await seen).toBe(1);
    expect(await answer).toEqual([{ one: 1 }]);
  });
});
