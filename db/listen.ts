/**
 * PostgreSQL's LISTEN on a connection of its own, re-established whenever it drops
 * (DatabaseHandle.listen; server/ledger/wake.ts hears other instances' commits through it).
 */
type Postgres = typeof import('postgres');

/**
 * LISTENs on `channel` at `url` until the returned function is called. `onState` says when the
 * connection is listening (true: also after each re-LISTEN, so signals sent while it was down may
 * have been missed) and when it was lost (false). Rejects when the first LISTEN fails.
 *
 * Not postgres.js's own listen(): it re-LISTENs after a drop too, but says nothing when the
 * connection is lost, and a reader that cannot tell must keep polling.
 */
export async function listenOn(
  postgres: Postgres,
  url: string,
  channel: string,
  onPayload: (payload: string) => void,
  onState?: (listening: boolean) => void,
): Promise<() => Promise<void>> {
  const statement = `listen "${channel.replace(/"/g, '""')}"`;
  let ended = false;
  let wanted = false;
  let running = false;
  const options = {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => undefined,
    onnotify: (name: string, payload: string) => {
      if (name === channel) onPayload(payload);
    },
    onclose: () => {
      if (ended) return;
      onState?.(false);
      relisten();
    },
  };
  const connection = postgres(url, options);
  const relisten = () => {
    wanted = true;
    if (!running) void loop();
  };
  const loop = async () => {
    running = true;
    let delay = 0;
    while (wanted && !ended) {
      wanted = false;
      if (delay > 0) await new Promise((r) => setTimeout(r, delay).unref());
      if (ended) break;
      try {
        await connection.unsafe(statement);
        delay = 0;
        if (!ended && !wanted) onState?.(true);
      } catch {
        wanted = true;
        delay = Math.min(Math.max(delay * 2, 250), 5000);
      }
    }
    running = false;
  };
  try {
    await connection.unsafe(statement);
  } catch (err) {
    ended = true;
    await connection.end({ timeout: 1 }).catch(() => undefined);
    throw err;
  }
  onState?.(true);
  return async () => {
    ended = true;
    await connection.end({ timeout: 5 });
  };
}
