/**
 * The service's side of the tools' local socket (scripts/tool-socket.ts says where it is and why it
 * is safe): while the service holds the embedded database, a command-line tool's `run` runs here,
 * on the service's runtime, and what it writes goes back to the tool's process.
 *
 * scripts/serve.mjs starts it once the service has booted, on PGlite with a data directory only;
 * it stops with the requests (server/shutdown.ts), after the runs under way have finished, so the
 * database closes under no tool.
 */
import { lstat, chmod, mkdir, rm, rmdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { Writable } from 'node:stream';
import { log } from '@/server/log';
import type { Runtime } from '@/server/runtime';
import { onStop } from '@/server/shutdown';
import { exitOf, type LoadedTool, type ToolIO } from './db-tool';
import { DB_TOOLS, toolSocketPath, type ToolReply, type ToolRequest } from './tool-socket';

/**
 * The most a tool's request may be: its options and a bundle's frame (files travel as paths), far
 * below this. A connection that sends more before its first line is cut, so nothing on the socket
 * can make the service hold an unbounded line.
 */
const REQUEST_MAX = 1024 * 1024;

/** How long runs under way get to finish when the service stops (within its 10 s). */
const FINISH_MS = 7_000;

/** The directory of the socket, made or taken over only when it is a directory of this user's, then closed to everyone else. */
async function privateDirectory(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const stat = await lstat(dir);
  if (!stat.isDirectory() || (process.getuid && stat.uid !== process.getuid())) {
    throw new Error(`${dir} is not a directory of this user's`);
  }
  await chmod(dir, 0o700);
}

/**
 * Listens on the socket of the runtime's PGlite directory. `load` gives the tool of a name
 * (scripts/<name>.ts, bundled for this process).
 */
export async function serveTools(
  runtime: Runtime,
  load: (name: string) => Promise<LoadedTool>,
): Promise<{ close(): Promise<void> } | null> {
  const socket = toolSocketPath(runtime.env.PGLITE_DATA_DIR);
  if (!socket) {
    log('warn', 'the command-line tools cannot reach this service: its data directory’s path is too long for a socket', {
      dataDir: runtime.env.PGLITE_DATA_DIR,
    });
    return null;
  }
  const dir = path.dirname(socket);
  await privateDirectory(dir);
  // One left by a service that was killed: this process holds the directory's lock, so no other service uses it.
  await rm(socket, { force: true });
  const loaded = new Map<string, Promise<LoadedTool>>();
  const running = new Set<Promise<void>>();
  const connections = new Set<net.Socket>();
  const server = net.createServer((conn) => {
    connections.add(conn);
    conn.once('close', () => connections.delete(conn));
    const done = serve(conn, runtime, (name) => {
      if (!loaded.has(name))
        loaded.set(
          name,
          load(name).catch((err: unknown) => (loaded.delete(name), Promise.reject(err))),
        );
      return loaded.get(name)!;
    });
    running.add(done);
    void done.finally(() => running.delete(done));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  await chmod(socket, 0o600);
  server.on('error', (err) => log('error', 'the tools’ socket failed', { error: err.message }));

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      server.close();
      if (running.size > 0) {
        await Promise.race([Promise.allSettled([...running]), new Promise((resolve) => setTimeout(resolve, FINISH_MS).unref())]);
      }
      for (const conn of connections) conn.destroy();
      await rm(socket, { force: true });
      await rmdir(dir).catch(() => undefined);
    })());
  onStop('requests', close);
  return { close };
}

async function serve(conn: net.Socket, runtime: Runtime, load: (name: string) => Promise<LoadedTool>): Promise<void> {
  conn.on('error', () => undefined);
  const send = (reply: ToolReply) => {
    if (!conn.destroyed) conn.write(`${JSON.stringify(reply)}\n`);
  };
  let read = 0;
  const count = (chunk: Buffer) => {
    read += chunk.length;
    if (read > REQUEST_MAX) conn.destroy();
  };
  conn.on('data', count);
  const lines = readline.createInterface({ input: conn, crlfDelay: Infinity });
  const first = await new Promise<string | null>((resolve) => {
    lines.once('line', resolve);
    conn.once('close', () => resolve(null));
  });
  lines.close();
  conn.off('data', count);
  if (first === null) return;
  const io = socketIO(conn, send, false);
  const started = performance.now();
  let name = '';
  let code: number;
  try {
    const request = JSON.parse(first) as ToolRequest;
    name = String(request.tool);
    // Only these are loaded: any other module of scripts/ would run its own command in this process.
    if (!DB_TOOLS.includes(name)) throw new Error(`No tool that opens the database is named ${JSON.stringify(name)}.`);
    const tool = await load(name);
    if (typeof tool?.run !== 'function') throw new Error(`${name} does not open the database.`);
    io.stderrIsTTY = request.stderrIsTTY === true;
    code = await tool.run(runtime, request.input, io);
  } catch (err) {
    code = exitOf(err, io);
  }
  log('info', 'tool ran in the service', { tool: name, exit: code, ms: Math.round(performance.now() - started) });
  send({ exit: code });
  conn.end();
}

/** A tool's output, sent over the socket; its stdout stream waits while the socket is full, and fails as a closed pipe once it is gone. */
function socketIO(conn: net.Socket, send: (reply: ToolReply) => void, stderrIsTTY: boolean): ToolIO {
  const out = (bytes: Buffer) => send({ out: bytes.toString('base64') });
  const err = (bytes: Buffer) => send({ err: bytes.toString('base64') });
  const gone = () => Object.assign(new Error('the tool’s process has gone'), { code: 'EPIPE' });
  const stdout = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (conn.destroyed) return callback(gone());
      if (conn.write(`${JSON.stringify({ out: chunk.toString('base64') })}\n`)) return callback();
      const settle = () => {
        conn.off('drain', settle);
        conn.off('close', settle);
        callback(conn.destroyed ? gone() : undefined);
      };
      conn.on('drain', settle);
      conn.on('close', settle);
    },
  });
  return {
    log: (line) => out(Buffer.from(`${line}\n`)),
    error: (line) => err(Buffer.from(`${line}\n`)),
    stdout,
    progress: (text) => err(Buffer.from(text)),
    stderrIsTTY,
  };
}
