/**
 * npm run ledger:witness against logs of the test's own on 127.0.0.1 that try to hold it: one that
 * sends headers and then nothing, one that accepts the connection and never answers, and one that
 * redirects elsewhere. The witness ends within its --timeout with status 1 and a line saying what
 * happened, follows no redirect (the server it names sees no request, and so never the key), and
 * SIGTERM or SIGINT during a hang ends it within ~2 s. Run as a process, as an operator runs it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

let dir: string;
const servers: (http.Server | net.Server)[] = [];
const sockets = new Set<net.Socket>();
const children: ReturnType<typeof spawn>[] = [];

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'aws-witness-hostile-'));
});
afterEach(async () => {
  // A witness still hanging (the test failed) is ended, and so is every connection the servers hold.
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Listens on a free loopback port; closed, with its connections, after the test. */
async function listen(server: http.Server | net.Server): Promise<{ url: string; port: number }> {
  servers.push(server);
  server.on('connection', (socket: net.Socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/api/v1`, port };
}

/** A server that sends the answer's headers and then nothing; `asked` resolves on its first request. */
function headersThenNothing(): { server: http.Server; asked: Promise<void> } {
  let seen!: () => void;
  const asked = new Promise<void>((resolve) => (seen = resolve));
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    seen();
  });
  return { server, asked };
}

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The witness as a process; `ended` settles when it exits, and a test that hangs fails on vitest's timeout. */
function witness(url: string, ...extra: string[]): { child: ReturnType<typeof spawn>; ended: Promise<Ended> } {
  const state = path.join(dir, `${Math.random().toString(36).slice(2)}.json`);
  const args = [path.join('scripts', 'tool.mjs'), 'ledger-witness', '--url', url, '--state', state, ...extra];
  // The key in the environment, never on the command line; these servers do not check it.
  const child = spawn(process.execPath, args, { env: { ...process.env, AWS_API_KEY: 'awk_hostile-test-key' } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const ended = new Promise<Ended>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, ended };
}

describe('ledger:witness against a hostile log', () => {
  it('gives up on a server that sends headers and then nothing, within --timeout, exit 1', async () => {
    const { server } = headersThenNothing();
    const { url } = await listen(server);
    const started = Date.now();
    const done = await witness(url, '--once', '--timeout', '2').ended;
    expect(done.code, done.stderr).toBe(1);
    expect(done.stderr).toContain('GET /ledger/checkpoint: no complete answer within 2 s (--timeout)');
    // Two seconds of waiting, and the tool's own start (bundling it takes a second or two).
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);

  it('gives up on a server that accepts the connection and never answers, within --timeout, exit 1', async () => {
    let accepted = 0;
    const { url } = await listen(net.createServer(() => accepted++));
    const done = await witness(url, '--once', '--timeout', '1').ended;
    expect(done.code, done.stderr).toBe(1);
    expect(done.stderr).toContain('GET /ledger/checkpoint: no complete answer within 1 s (--timeout)');
    expect(accepted).toBeGreaterThan(0);
  }, 30_000);

  it('refuses a redirect, naming its status and Location; the server it names sees no request', async () => {
    let elsewhereRequests = 0;
    const elsewhere = await listen(
      http.createServer((_req, res) => {
        elsewhereRequests++;
        res.end('{}');
      }),
    );
    const location = `http://127.0.0.1:${elsewhere.port}/api/v1/ledger/checkpoint`;
    const { url } = await listen(
      http.createServer((_req, res) => {
        res.writeHead(302, { location });
        res.end();
      }),
    );
    const done = await witness(url, '--once').ended;
    expect(done.code, done.stderr).toBe(1);
    expect(done.stderr).toContain(`GET /ledger/checkpoint: the service answered 302 redirecting to "${location}"`);
    expect(elsewhereRequests).toBe(0);
  }, 30_000);

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} during a hang ends it within ~2 s, saying so (exit 1)`, async () => {
      const { server, asked } = headersThenNothing();
      const { url } = await listen(server);
      // Without --once: a witness left running, as an operator runs it; a timeout far off.
      const { child, ended } = witness(url, '--timeout', '600');
      await asked;
      const sent = Date.now();
      child.kill(signal);
      const done = await ended;
      expect(Date.now() - sent).toBeLessThan(2_500);
      expect(done.signal).toBeNull();
      expect(done.code, done.stderr).toBe(1);
      expect(done.stderr).toContain(
        `Stopped by ${signal}: GET /ledger/checkpoint was in flight and is abandoned; the state file is unchanged.`,
      );
    }, 30_000);
  }

  it('refuses a --timeout that is not a positive number of seconds (exit 2)', async () => {
    const done = await witness('http://127.0.0.1:9/api/v1', '--once', '--timeout', '0').ended;
    expect(done.code).toBe(2);
    expect(done.stderr).toContain('--timeout takes a number of seconds');
  }, 30_000);
});
