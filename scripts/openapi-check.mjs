// The OpenAPI document as the server serves it, checked from outside with tools nobody here wrote:
// `redocly lint` (its recommended rules) and `spectral lint` (spectral:oas) must report nothing,
// not even a warning; and the typed client's types (clients/typescript/schema.d.ts) must be what
// openapi-typescript generates from it. CI runs it (.ci/run); `npm run client:generate` runs it
// with --write, which writes the types instead of comparing them.
//
// It starts the built server (npm run build first) on a free port with a throwaway PGlite
// directory, fetches GET /api/v1/openapi.json, and stops the server.
//
// Usage: node scripts/openapi-check.mjs [--write]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const write = process.argv.includes('--write');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const typesFile = path.join(root, 'clients', 'typescript', 'schema.d.ts');
// The document names the address it is served from (contact, session cookie): the types are
// generated from one served at this address, so they do not depend on the port the check used.
const APP_URL = 'http://127.0.0.1:3000';

async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function servedDocument() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aws-openapi-'));
  const port = await freePort();
  const server = spawn(process.execPath, [path.join(root, 'scripts', 'serve.mjs')], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      APP_URL,
      DATABASE_URL: '',
      PGLITE_DATA_DIR: path.join(dir, 'pglite'),
      SEED_DEMO: 'false',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode} (npm run build first?)`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/openapi.json`);
        if (res.ok) return { text: await res.text(), dir };
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error('the server did not answer within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => (server.exitCode !== null ? resolve() : server.once('exit', resolve)));
  }
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout ?? '', out: `${result.stdout ?? ''}${result.stderr ?? ''}` };
}

const problems = [];
const { text, dir } = await servedDocument();
try {
  const file = path.join(dir, 'openapi.json');
  writeFileSync(file, text);

  // Redocly fails only on errors: its JSON report's totals count the warnings too.
  const redocly = run(bin('redocly'), ['lint', '--extends', 'recommended', '--format', 'json', file]);
  // The JSON report is the standard output (a notice about Node's version goes to standard error).
  const totals = JSON.parse(redocly.stdout).totals;
  if (totals.errors + totals.warnings > 0) {
    problems.push(`redocly lint: ${totals.errors} errors, ${totals.warnings} warnings`);
    console.error(run(bin('redocly'), ['lint', '--extends', 'recommended', file]).out);
  } else console.log('redocly lint (recommended): no errors, no warnings');

  // Spectral fails at --fail-severity and above: hint, the lowest, so anything it reports fails.
  const spectral = run(bin('spectral'), ['lint', '--ruleset', path.join(root, '.spectral.yaml'), '--fail-severity', 'hint', file]);
  if (spectral.code !== 0) problems.push(`spectral lint (spectral:oas):\n${spectral.out}`);
  else console.log('spectral lint (spectral:oas): no results');

  const generated = path.join(dir, 'schema.d.ts');
  const types = run(bin('openapi-typescript'), [file, '--output', generated]);
  if (types.code !== 0) problems.push(`openapi-typescript failed:\n${types.out}`);
  else {
    const fresh = readFileSync(generated, 'utf8');
    if (write) {
      writeFileSync(typesFile, fresh);
      console.log(`wrote ${path.relative(root, typesFile)}`);
    } else if (readFileSync(typesFile, 'utf8') !== fresh) {
      problems.push(`${path.relative(root, typesFile)} differs from the served document: run npm run client:generate and commit it`);
    } else console.log(`${path.relative(root, typesFile)} matches the served document`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (problems.length > 0) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
