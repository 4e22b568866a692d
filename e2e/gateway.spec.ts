/**
 * The MCP gateway with real parts only: a real upstream MCP server (the SDK's, started here,
 * recording every call it receives and refusing requests without its credential), registered over
 * REST with the fixture's key; a real MCP client (the SDK's, over Streamable HTTP with the key)
 * calling its tools through /mcp; Chromium for the humans: an approver who edits and approves or
 * declines a held call on its decision page, an owner who changes a tool's mode, registers and
 * removes a server on Settings → Tools, a viewer who may only read. The ledger's tool_call.* events
 * carry the digests of exactly what the upstream received and the client got, never the upstream's
 * credential, and a bundle of the workspace verifies.
 *
 * The tests run in order on one upstream: each counts the calls it adds to the upstream's record.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test, type Browser, type Locator, type Page } from '@playwright/test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { digestOf } from '../server/ledger/canonical';
import { BANK_GUARDS, BANK_TOOLS, startUpstream, type Upstream } from '../test/support/upstream-mcp';
import { APP_ORIGIN, fixture, signIn } from './support';

test.describe.configure({ mode: 'serial' });

/** The upstream's credential: the service sends it, and it must appear in no event and no bundle. */
const UPSTREAM_TOKEN = `Bearer e2e-upstream-${randomUUID()}`;

let upstream: Upstream;
let serverId: string;
const clients: Client[] = [];
/** Every call the service sent on, in order: what the client got back (the upstream's record holds what it received). */
const answers: CallToolResult[] = [];

/** The REST API with the fixture's key (an owner's key of the fixture's workspace). */
async function api(method: string, url: string, body?: unknown) {
  const res = await fetch(`${APP_ORIGIN}/api/v1${url}`, {
    method,
    headers: { Authorization: `Bearer ${fixture().apiKey}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

test.beforeAll(async () => {
  upstream = await startUpstream(BANK_TOOLS, { requireHeaders: { authorization: UPSTREAM_TOKEN } });
  const registered = await api('POST', '/mcp-servers', {
    name: 'bank',
    url: upstream.url,
    headers: { Authorization: UPSTREAM_TOKEN },
    guards: BANK_GUARDS,
    default_mode: 'ask',
  });
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  serverId = registered.body.data.id;
});

test.afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  // The other spec files on this worker's server see /mcp as it was before.
  if (serverId) await api('DELETE', `/mcp-servers/${serverId}`);
  await upstream?.close();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'e2e-gateway', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', APP_ORIGIN), {
      requestInit: { headers: { Authorization: `Bearer ${fixture().apiKey}` } },
    }),
  );
  clients.push(client);
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>, signal?: AbortSignal) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 120_000, signal }) as Promise<CallToolResult>;

const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text;

/** The upstream's calls received since `before`. */
const receivedSince = (before: number) => upstream.calls.slice(before).map((c) => ({ tool: c.tool, arguments: c.arguments }));

/** The pending decision the gateway raised for `bank.<tool>` with `args`, as the API lists it. */
async function pendingDecision(tool: string, args: Record<string, unknown>): Promise<string> {
  const digest = digestOf({ tool: `bank.${tool}`, arguments: args });
  let found: string | undefined;
  await expect
    .poll(
      async () => {
        const list = await api('GET', '/decisions?status=pending&limit=100');
        found = (list.body.data as { id: string; action_digest: string | null }[]).find((d) => d.action_digest === digest)?.id;
        return found;
      },
      { timeout: 15_000, message: `a pending decision for bank.${tool}` },
    )
    .toBeTruthy();
  return found!;
}

/** Rules on the decision page as the approver: approve (with `edited` arguments, when given) or decline, with a note if given. */
async function rule(
  page: Page,
  id: string,
  ruling: 'approve' | 'decline',
  { edited, note }: { edited?: Record<string, unknown>; note?: string } = {},
): Promise<void> {
  await page.goto(`/decisions/${id}`);
  if (edited) await page.getByLabel('Arguments to approve (JSON)').fill(JSON.stringify(edited, null, 2));
  if (note) await page.getByLabel('Note (optional)').fill(note);
  await page.getByRole('button', { name: ruling === 'approve' ? 'Approve' : 'Decline', exact: true }).click();
  await page.getByRole('button', { name: ruling === 'approve' ? 'Confirm approve' : 'Confirm decline' }).click();
  await expect(page.getByRole('status').first()).toContainText(ruling === 'approve' ? 'Approved' : 'Declined');
}

/** What a call of the tool in this row of a server's tools does now, and the guard that says so (the cells before the form). */
const modeOf = (row: Locator) => row.locator('td').nth(1);
const guardOf = (row: Locator) => row.locator('td').nth(2);

/** The decision page's account of what came of the call, once it says `expected`. */
async function runLine(page: Page, id: string, expected: RegExp) {
  const line = page.getByTestId('gateway-run');
  await expect(async () => {
    await page.goto(`/decisions/${id}`);
    await expect(line).toHaveText(expected, { timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
  return (await line.textContent())!;
}

async function approverPage(browser: Browser): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await signIn(page, fixture().users.approver);
  return page;
}

test('allow: the call reaches the upstream once, with the arguments sent and the upstream’s credential', async () => {
  const client = await connect();
  const names = (await client.listTools()).tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(['create_work', 'bank__echo', 'bank__transfer', 'bank__wipe']));

  const before = upstream.calls.length;
  const args = { text: `hello ${randomUUID()}` };
  const result = await call(client, 'bank__echo', args);
  expect(result.isError).toBeFalsy();
  expect(textOf(result)).toBe(JSON.stringify(args));
  answers.push(result);
  expect(receivedSince(before)).toEqual([{ tool: 'echo', arguments: args }]);
  expect(upstream.calls.at(-1)!.headers.authorization).toBe(UPSTREAM_TOKEN);
});

test('deny: the call is refused and never reaches the upstream', async () => {
  const client = await connect();
  const before = upstream.calls.length;
  const result = await call(client, 'bank__wipe', { all: true });
  expect(result.isError).toBe(true);
  expect(textOf(result)).toMatch(/wipe on bank is not allowed: refused by guard #2/);
  expect(upstream.calls.length).toBe(before);
});

test('ask: the approver sees “transfer on bank”, edits the arguments and approves; the upstream receives exactly those, once', async ({
  browser,
}) => {
  test.setTimeout(60_000);
  const client = await connect();
  const before = upstream.calls.length;
  const asked = { to: 'bob', amount: 100 };
  const waiting = call(client, 'bank__transfer', asked);
  const id = await pendingDecision('transfer', asked);
  expect(upstream.calls.length).toBe(before);

  const page = await approverPage(browser);
  await page.goto(`/decisions/${id}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('transfer on bank');
  const panel = page.getByRole('region', { name: 'The action' });
  await expect(panel.getByTestId('action-tool')).toHaveText('transfer on bank');
  await expect(panel.getByTestId('gateway-call')).toContainText('approved, the service runs it once, with the arguments as approved');
  await expect(panel.getByTestId('gateway-run')).toHaveCount(0);

  const edited = { to: 'bob', amount: 50 };
  await rule(page, id, 'approve', { edited });
  const result = await waiting;
  expect(result.isError).toBeFalsy();
  answers.push(result);
  const received = receivedSince(before);
  expect(received).toEqual([{ tool: 'transfer', arguments: edited }]);

  // The grant names exactly what the upstream received (RFC 8785 digest of the action).
  const decision = (await api('GET', `/decisions/${id}`)).body.decision;
  expect(decision.grant.action_digest).toBe(digestOf({ tool: 'bank.transfer', arguments: received[0]!.arguments }));
  expect(decision.grant.consumed_at).not.toBeNull();

  const line = await runLine(page, id, /^Ran at /);
  expect(line).toMatch(/^Ran at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC in \d+ ms, result sha256:[0-9a-f]{64}$/);
  expect(line).toContain(`result ${digestOf(result)}`);
  await expect(page.getByRole('heading', { name: 'Arguments as approved' })).toBeVisible();
  await page.context().close();
});

test('declined: the call never reaches the upstream, and the decision page says it did not run', async ({ browser }) => {
  test.setTimeout(60_000);
  const client = await connect();
  const before = upstream.calls.length;
  const asked = { to: 'mallory', amount: 1_000_000 };
  const waiting = call(client, 'bank__transfer', asked);
  const id = await pendingDecision('transfer', asked);
  const page = await approverPage(browser);
  await rule(page, id, 'decline', { note: 'Not to Mallory.' });
  const result = await waiting;
  expect(result.isError).toBe(true);
  expect(textOf(result)).toMatch(/was declined.*not called.*Not to Mallory\./);
  expect(upstream.calls.length).toBe(before);
  expect(await runLine(page, id, /^Not run/)).toBe('Not run: declined');
  await page.context().close();
});

test('a call retried while pending (the first request aborted) joins the same decision and runs once after approval', async ({
  browser,
}) => {
  test.setTimeout(60_000);
  const first = await connect();
  const before = upstream.calls.length;
  const asked = { to: 'carol', amount: 7 };
  const hangUp = new AbortController();
  const abandoned = call(first, 'bank__transfer', asked, hangUp.signal).catch((err: unknown) => err);
  const id = await pendingDecision('transfer', asked);
  hangUp.abort();
  await abandoned;

  const again = await connect();
  const retried = call(again, 'bank__transfer', asked);
  // The retry waits on the decision already raised: still one pending for this exact call.
  await expect
    .poll(async () => {
      const list = await api('GET', '/decisions?status=pending&limit=100');
      const digest = digestOf({ tool: 'bank.transfer', arguments: asked });
      return (list.body.data as { action_digest: string }[]).filter((d) => d.action_digest === digest).length;
    })
    .toBe(1);

  const page = await approverPage(browser);
  await rule(page, id, 'approve');
  const result = await retried;
  expect(result.isError).toBeFalsy();
  answers.push(result);
  expect(receivedSince(before)).toEqual([{ tool: 'transfer', arguments: asked }]);
  await runLine(page, id, /^Ran at /);
  await page.context().close();
});

test('Settings → Tools: the owner switches a tool to deny, and its next call is refused unsent and listed among the recent calls', async ({
  page,
}) => {
  test.setTimeout(60_000);
  await signIn(page, fixture().users.owner);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tools' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Tools');
  const bank = page.getByRole('region', { name: 'bank', exact: true });
  await expect(bank).toContainText(new URL(upstream.url).host);
  await expect(bank).toContainText('authorization');
  await expect(bank.getByRole('definition').filter({ hasText: 'Ask: runs once a human approves it' })).toBeVisible();
  await expect(page.locator('body')).not.toContainText(UPSTREAM_TOKEN.slice('Bearer '.length));
  const echo = bank.getByTestId('tool-bank-echo');
  await expect(modeOf(echo)).toHaveText('Allow: runs at once');
  await expect(guardOf(echo)).toHaveText('guard 1, for this tool');
  // The transfer tool no guard names: the default mode decides it.
  const transfer = bank.getByTestId('tool-bank-transfer');
  await expect(modeOf(transfer)).toHaveText('Ask: runs once a human approves it');
  await expect(guardOf(transfer)).toHaveText('the default mode');
  // The earlier calls are listed, newest first, an asked one linking to its decision.
  const calls = bank.locator('table.tool-calls tbody tr');
  await expect(calls.first()).toContainText('transfer');
  await expect(calls.first().getByRole('link', { name: /^Decision on the call of transfer/ })).toHaveAttribute(
    'href',
    /^\/decisions\/[0-9a-f-]{36}$/,
  );
  await expect(bank.locator('table.tool-calls')).toContainText('Not run: refused by its guard');

  await echo.getByRole('combobox', { name: 'Mode of echo' }).selectOption('deny');
  await echo.getByRole('button', { name: 'Set mode of echo' }).click();
  await expect(page.getByRole('status')).toHaveText('echo on bank: Deny: never runs.');
  await expect(modeOf(echo)).toHaveText('Deny: never runs');
  const server = (await api('GET', `/mcp-servers/${serverId}`)).body.data;
  expect(server.guards).toEqual([
    { tool: 'echo', mode: 'deny' },
    { tool: 'wipe', mode: 'deny' },
  ]);

  const client = await connect();
  const before = upstream.calls.length;
  const result = await call(client, 'bank__echo', { text: 'after the switch' });
  expect(result.isError).toBe(true);
  expect(textOf(result)).toMatch(/echo on bank is not allowed: refused by guard #1/);
  expect(upstream.calls.length).toBe(before);
  await page.reload();
  const newest = bank.locator('table.tool-calls tbody tr').first();
  await expect(newest).toContainText('echo');
  await expect(newest).toContainText('Refused');
  await expect(newest).toContainText('Not run: refused by its guard');

  // The default mode, for tools no guard names.
  await bank.getByRole('combobox', { name: 'Default mode of bank' }).selectOption('deny');
  await bank.getByRole('button', { name: 'Set default mode of bank' }).click();
  await expect(page.getByRole('status')).toHaveText('bank: a tool no guard names is now “Deny: never runs”.');
  await expect(modeOf(transfer)).toHaveText('Deny: never runs');
  expect((await api('GET', `/mcp-servers/${serverId}`)).body.data.default_mode).toBe('deny');
  await bank.getByRole('combobox', { name: 'Default mode of bank' }).selectOption('ask');
  await bank.getByRole('button', { name: 'Set default mode of bank' }).click();
  await expect(modeOf(transfer)).toHaveText('Ask: runs once a human approves it');
});

test('Settings → Tools: the owner registers a server with its credential, lists its tools again and removes it; a viewer only reads', async ({
  page,
  browser,
}) => {
  test.setTimeout(60_000);
  await signIn(page, fixture().users.owner);
  await page.goto('/settings/tools');
  const form = page.getByRole('form', { name: 'Register an MCP server' });
  await form.getByLabel('Name', { exact: true }).fill('bank-copy');
  await form.getByLabel('URL').fill(upstream.url);
  await expect(form.getByLabel('Header 1 name')).toHaveValue('Authorization');
  await form.getByLabel('Header 1 value').fill(UPSTREAM_TOKEN);
  await form.getByRole('button', { name: 'Register' }).click();
  await expect(page.getByRole('status')).toHaveText(
    'Registered bank-copy with 3 tools. Its header values are kept sealed and are not shown again.',
  );
  const copy = page.getByRole('region', { name: 'bank-copy' });
  await expect(modeOf(copy.getByTestId('tool-bank-copy-wipe'))).toHaveText('Ask: runs once a human approves it');
  await expect(page.locator('body')).not.toContainText(UPSTREAM_TOKEN.slice('Bearer '.length));

  await copy.getByRole('button', { name: 'List tools again: bank-copy' }).click();
  await expect(page.getByRole('status')).toHaveText('bank-copy listed 3 tools, as before.');

  await copy.getByRole('button', { name: 'Remove bank-copy' }).click();
  await copy.getByRole('button', { name: 'Confirm remove' }).click();
  await expect(page.getByRole('status')).toContainText('Removed bank-copy');
  await expect(page.getByRole('region', { name: 'bank-copy' })).toHaveCount(0);
  const names = ((await api('GET', '/mcp-servers')).body.data as { name: string }[]).map((s) => s.name);
  expect(names).toEqual(['bank']);

  // A server that cannot be listed is refused, in words, and nothing is registered.
  await form.getByLabel('Name', { exact: true }).fill('bank-locked');
  await form.getByLabel('URL').fill(upstream.url);
  await form.getByLabel('Header 1 value').fill('Bearer wrong');
  await form.getByRole('button', { name: 'Register' }).click();
  await expect(page.locator('p[role=alert]')).toContainText('Its tools could not be listed, so nothing was written.');
  await expect(page.getByRole('region', { name: 'bank-locked' })).toHaveCount(0);

  const viewer = await (await browser.newContext()).newPage();
  await signIn(viewer, fixture().users.viewer);
  await viewer.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tools' }).click();
  await expect(viewer.getByTestId('owners-only')).toContainText('Only the owners of');
  await expect(viewer.getByRole('button', { name: /Register|Set|List tools|Remove/ })).toHaveCount(0);
  await expect(viewer.getByRole('combobox')).toHaveCount(0);
  await expect(viewer.locator('table.tool-calls tbody tr').first()).toContainText('echo on bank');
  await viewer.context().close();
});

test('the ledger: tool_call.* digests are those of what the upstream received and the client got, no credential anywhere, and a bundle verifies', async ({
  page,
}) => {
  test.setTimeout(60_000);
  const events: { eventType: string; aggregateId: string; payload: Record<string, unknown> }[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await api('GET', `/events/stream?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    events.push(...res.body.data);
    if (!res.body.meta.hasMore) break;
    cursor = res.body.meta.nextCursor;
  }
  const all = JSON.stringify(events);
  expect(all).not.toContain(UPSTREAM_TOKEN.slice('Bearer '.length));

  const typed = await api('GET', '/events/stream?type=tool_call.forwarded&type=tool_call.returned&type=tool_call.refused&limit=100');
  const mine = (typed.body.data as typeof events).filter((e) => e.payload.server_id === serverId || e.eventType === 'tool_call.returned');
  const forwarded = mine.filter((e) => e.eventType === 'tool_call.forwarded');
  // Sent on: the allowed echo, the approved (edited) transfer, the retried transfer; in that order.
  expect(forwarded.map((e) => e.payload.arguments_digest)).toEqual(upstream.calls.map((c) => digestOf(c.arguments)));
  expect(forwarded.map((e) => e.payload.mode)).toEqual(['allow', 'ask', 'ask']);
  const returned = forwarded.map((f) => mine.find((e) => e.eventType === 'tool_call.returned' && e.aggregateId === f.aggregateId)!);
  expect(returned.map((e) => e.payload.result_digest)).toEqual(answers.map((a) => digestOf(a)));
  expect(returned.map((e) => e.payload.is_error)).toEqual([false, false, false]);
  const refused = mine.filter((e) => e.eventType === 'tool_call.refused').map((e) => `${e.payload.tool} ${e.payload.reason}`);
  expect(refused).toEqual(expect.arrayContaining(['wipe denied', 'transfer declined', 'echo denied']));

  // The whole workspace as a bundle, checked offline by the command line tool.
  await signIn(page, fixture().users.owner);
  const bundle = await page.request.get(`/ledger/bundle?workspace=${fixture().workspaceId}`);
  expect(bundle.status()).toBe(200);
  const text = await bundle.text();
  expect(text).not.toContain(UPSTREAM_TOKEN.slice('Bearer '.length));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aws-gateway-bundle-'));
  try {
    const file = path.join(dir, 'bundle.json');
    writeFileSync(file, text);
    const head = JSON.parse(readFileSync(file, 'utf8')).head.sequence as number;
    const [key] = (await api('GET', '/ledger/keys')).body.data as { vkey: string }[];
    const verified = spawnSync(process.execPath, ['scripts/tool.mjs', 'ledger-verify', '--bundle', file, '--vkey', key!.vkey], {
      cwd: path.join(import.meta.dirname, '..'),
      encoding: 'utf8',
      env: { ...process.env, LOG_LEVEL: 'silent' },
    });
    expect(verified.status, verified.stderr + verified.stdout).toBe(0);
    expect(verified.stdout).toMatch(new RegExp(`^OK: ${head} events verified`, 'm'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
