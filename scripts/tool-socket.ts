/**
 * The local socket through which a command-line tool reaches the running service that holds the
 * embedded database: PGlite lets one process open its directory, and a newcomer's `npm start` is
 * that process. The tool's `run` (scripts/db-tool.ts) then runs in the service, on its database,
 * and what it writes, its messages and its exit status come back over the socket unchanged.
 *
 * Where: `<PGLITE_DATA_DIR>.tools/tools.sock`, beside the data directory, as its lock
 * (`<PGLITE_DATA_DIR>.lock`) is. The service makes that directory mode 0700 and the socket 0600
 * (scripts/tool-service.ts).
 *
 * Why that is safe: the socket gives no more than the data directory already gives. Whoever can
 * open it is the service's own user (or root), who can read and write the database's files, stop
 * the service and open the database with any tool; nobody else can enter the directory. It asks
 * for no key because it needs none: the file permissions are the authentication, as for
 * PostgreSQL's own local socket with peer authentication. It only runs the tools of scripts/, by
 * name, never code it is sent.
 *
 * The conversation: one JSON line from the tool, `{tool, input, stderrIsTTY}`; then JSON lines from
 * the service, `{out}` and `{err}` (base64 bytes for stdout and stderr) and last `{exit}`.
 */
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { ToolExit } from './cli';

/** The tools that open the database (scripts/<name>.ts, declared with scripts/db-tool.ts): the only ones the service runs. */
export const DB_TOOLS: readonly string[] = [
  'key-create',
  'key-revoke',
  'ledger-export',
  'ledger-rotate-key',
  'ledger-verify',
  'projections-rebuild',
  'user-add',
  'user-reset-password',
  'workspace-create',
  'workspace-restore',
];

/** What a tool sends the service. */
export interface ToolRequest {
  /** The tool's name, as scripts/tool.mjs takes it (scripts/<tool>.ts). */
  tool: string;
  /** What its `prepare` returned. */
  input: unknown;
  stderrIsTTY: boolean;
}

/** What the service sends back, one per line. */
export type ToolReply = { out: string } | { err: string } | { exit: number };

// A unix socket's path has room for 107 bytes on Linux (103 on macOS); a shorter relative form is
// used when the absolute one is too long (each process resolves it from its own directory).
const SOCKET_PATH_MAX = 100;

/** The socket for the embedded database in `dataDir`; null for an in-memory one, or a path too long to bind. */
export function toolSocketPath(dataDir: string): string | null {
  if (dataDir.startsWith('memory://')) return null;
  const absolute = path.join(`${path.resolve(dataDir)}.tools`, 'tools.sock');
  if (Buffer.byteLength(absolute) <= SOCKET_PATH_MAX) return absolute;
  const relative = path.relative(process.cwd(), absolute);
  return Buffer.byteLength(relative) <= SOCKET_PATH_MAX ? relative : null;
}

/**
 * Runs the tool in the service listening on `socket`, passing on what it writes; its exit status,
 * or null when no service listens there (none runs, or one was stopped without removing it).
 */
export function runInService(socket: string, request: ToolRequest): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    let connected = false;
    let code: number | null = null;
    // A reader that has gone (`| head`) gets nothing more; the run still ends with its own status.
    let stdoutGone = false;
    process.stdout.once('error', () => (stdoutGone = true));
    conn.on('error', (err) => {
      if (!connected) resolve(null);
      else reject(new ToolExit(1, `The service stopped answering at ${socket}: ${err.message}`));
    });
    conn.once('connect', () => {
      connected = true;
      conn.write(`${JSON.stringify(request)}\n`);
      readline.createInterface({ input: conn, crlfDelay: Infinity }).on('line', (line) => {
        const reply = JSON.parse(line) as ToolReply;
        if ('out' in reply) {
          if (stdoutGone || process.stdout.destroyed) return;
          if (!process.stdout.write(Buffer.from(reply.out, 'base64'))) {
            conn.pause();
            process.stdout.once('drain', () => conn.resume());
          }
        } else if ('err' in reply) process.stderr.write(Buffer.from(reply.err, 'base64'));
        else code = reply.exit;
      });
    });
    conn.once('close', () => {
      if (!connected) return;
      if (code === null) reject(new ToolExit(1, `The service at ${socket} closed the connection before the tool finished (did it stop?).`));
      else resolve(code);
    });
  });
}
