/**
 * Hostile input to the MCP endpoint, over real HTTP (POST /mcp as a client without the SDK sends
 * it): the message bodies get the REST API's strict-JSON rules before the protocol's schemas or
 * any tool sees them (deep nesting, repeated names, bodies over the limit), and every tool
 * argument that becomes a path segment is checked against its operation's own schema before the
 * path is built, so `.`, `..`, `%2e` or `a/b` never name another operation. Whatever is sent, the
 * answer is a JSON-RPC error or a tool error in the contract's envelope: never a 5xx, never an
 * internal error (-32603), nothing written, and no stack in the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tools } from '@/server/mcp/tools';
import { startTestApp, type TestApp } from '../support/app';
import { capturedLogLines } from '../support/log-capture';

let app: TestApp;
let session: Record<string, string>;
let decisionId: string;
let nextId = 1;

beforeAll(async () => {
  app = await startTestApp();
  const raised = await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'One to list' } });
  expect(raised.status).toBe(201);
  decisionId = raised.body.decision.id;
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'hostile', version: '1' } },
  });
  expect(init.status).toBe(200);
  await init.text();
  session = { 'Mcp-Session-Id': init.headers.get('mcp-session-id')!, 'Mcp-Protocol-Version': '2025-11-25' };
});
afterAll(async () => {
  await app?.close();
});

function post(body: unknown, headers: Record<string, string> = session ?? {}): Promise<Response> {
  return fetch(new URL('/mcp', app.url), {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${app.ws.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

interface RpcAnswer {
  status: number;
  message: { id?: unknown; result?: Record<string, any>; error?: { code: number; message: string; data?: unknown } };
}

/** Sends one message and reads its answer: the JSON body of a refusal, or the response on the event stream. */
async function send(body: unknown): Promise<RpcAnswer> {
  const res = await post(body);
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) return { status: res.status, message: JSON.parse(text) };
  const messages = text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as RpcAnswer['message']);
  const response = messages.find((m) => 'result' in m || 'error' in m);
  expect(response, text).toBeDefined();
  return { status: res.status, message: response! };
}

const callTool = (name: string, args: unknown) =>
  send({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });
const readResource = (uri: string) => send({ jsonrpc: '2.0', id: nextId++, method: 'resources/read', params: { uri } });

/** Neither a 5xx nor an internal error. */
function expectNoFault(answer: RpcAnswer): void {
  expect(answer.status).toBeLessThan(500);
  expect(answer.message.error?.code).not.toBe(-32603);
  if (answer.message.result?._meta) expect(answer.message.result._meta['aws/status']).toBeLessThan(500);
}

/** A tool's refusal: the operation's error, as its REST request would have had it. */
function toolError(answer: RpcAnswer): { status: number; code: string } {
  expectNoFault(answer);
  expect(answer.message.result, JSON.stringify(answer.message)).toBeDefined();
  expect(answer.message.result!.isError).toBe(true);
  return { status: answer.message.result!._meta['aws/status'], code: answer.message.result!.structuredContent.error.code };
}

/** Arrays `depth` deep, as JSON text (the test's own JSON.stringify would overflow on the deepest). */
const nestedText = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const nested = (depth: number): unknown => JSON.parse(nestedText(depth));
/** A tools/call whose arguments hold `inner` (JSON text) as the description. */
const callText = (name: string, inner: string) =>
  `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":"${name}","arguments":{"title":"deep","description":${inner}}}}`;

/** Every tool argument that becomes a path segment, from the tools themselves: one added later is covered too. */
const pathArguments = [...tools().values()].flatMap((tool) =>
  [...tool.places].filter(([, place]) => place.in === 'path').map(([arg]) => ({ tool: tool.name, arg })),
);
const PATHISH = ['.', '..', '%2e', '%2E%2e', './', 'a/b', '../decisions', '..%2f..', '/', '\\', '?', '#', ' ', 'decisions'];

describe('MCP arguments that become path segments', () => {
  it('are found in the tools (get_decision, the run tools)', () => {
    expect(pathArguments).toEqual(
      expect.arrayContaining([
        { tool: 'get_decision', arg: 'id' },
        { tool: 'heartbeat', arg: 'runId' },
      ]),
    );
  });

  it.each(pathArguments)('$tool $arg: path-ish values are 400 validation_failed naming it, and change nothing', async ({ tool, arg }) => {
    await app.expectUnchanged(async () => {
      for (const value of PATHISH) {
        const answer = await callTool(tool, { [arg]: value });
        expect(toolError(answer), `${tool} ${arg}=${JSON.stringify(value)}`).toEqual({ status: 400, code: 'validation_failed' });
        expect(answer.message.result!.structuredContent.error.details.issues[0].path).toBe(arg);
      }
      for (const value of [42, null, true, ['x'], { id: decisionId }]) {
        expect(toolError(await callTool(tool, { [arg]: value }))).toEqual({ status: 400, code: 'validation_failed' });
      }
    });
  });

  it('get_decision with a real id still reads it', async () => {
    const answer = await callTool('get_decision', { id: decisionId.toUpperCase() });
    expectNoFault(answer);
    expect(answer.message.result!.structuredContent.decision.id).toBe(decisionId);
  });
});

describe('resources/read URIs', () => {
  it('decision:// with anything but an id is a JSON-RPC error, never the decision list', async () => {
    for (const id of ['.', '..', '%2e', '%2e%2e', 'a%2Fb', '..%2f', ' ', 'x']) {
      const answer = await readResource(`decision://${id}`);
      expectNoFault(answer);
      expect(answer.message.result, `decision://${id}`).toBeUndefined();
      expect(answer.message.error!.code).toBe(-32602);
    }
    for (const uri of [
      'decision://',
      'decision://a/b',
      'decision:///',
      'ledger://checkpoint/..',
      'file:///etc/passwd',
      'decision://../..',
    ]) {
      const answer = await readResource(uri);
      expectNoFault(answer);
      expect(answer.message.result, uri).toBeUndefined();
    }
    const read = await readResource(`decision://${decisionId}`);
    expect(JSON.parse(read.message.result!.contents[0].text).decision.id).toBe(decisionId);
  });
});

describe('MCP bodies read as strictly as REST bodies', () => {
  it('a create_work argument nested 5,000 deep is a parse error (400, -32700) before the protocol’s schemas, and writes nothing', async () => {
    await app.expectUnchanged(async () => {
      for (const depth of [5_000, 100, 65]) {
        const answer = await send(callText('create_work', nestedText(depth)));
        expect(answer.status).toBe(400);
        expect(answer.message.error).toMatchObject({ code: -32700, message: expect.stringContaining('deeper than 66') });
      }
      const params = await send(`{"jsonrpc":"2.0","id":${nextId++},"method":"tools/list","params":${nestedText(5_000)}}`);
      expect(params.status).toBe(400);
      expect(params.message.error!.code).toBe(-32700);
    });
  });

  it('nesting REST would take is handed on, and refused by the operation as REST refuses it', async () => {
    // Arguments 64 levels deep (the REST body's limit): the tool's field rules answer, not the door.
    const answer = await callTool('create_work', { title: 'deep', description: nested(63) });
    expect(toolError(answer)).toEqual({ status: 400, code: 'validation_failed' });
  });

  it('repeated member names, __proto__ members, bad UTF-8, non-JSON and a number beyond a double are parse errors (400, -32700)', async () => {
    await app.expectUnchanged(async () => {
      const texts = [
        `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":"create_work","arguments":{"title":"a","title":"b"}}}`,
        `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":"create_work","arguments":{"title":"a","estimate_hours":1e400}}}`,
        // The protocol's schemas would copy it away silently: refused at the door instead.
        `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":"create_work","arguments":{"title":"ok","__proto__":{"polluted":true}}}}`,
        '{"jsonrpc":"2.0",',
        'not json',
      ];
      for (const text of texts) {
        const answer = await send(text);
        expect(answer.status, text).toBe(400);
        expect(answer.message.error!.code, text).toBe(-32700);
      }
      const bad = await fetch(new URL('/mcp', app.url), {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${app.ws.apiKey}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          ...session,
        },
        body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
      });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as RpcAnswer['message']).error!.code).toBe(-32700);
    });
  });

  it('huge strings: over the body limit 413 in the contract’s envelope; within it, the field’s own rule', async () => {
    await app.expectUnchanged(async () => {
      const huge = await post({
        jsonrpc: '2.0',
        id: nextId++,
        method: 'tools/call',
        params: { name: 'create_work', arguments: { title: 'x'.repeat(3 * 1024 * 1024) } },
      });
      expect(huge.status).toBe(413);
      expect(((await huge.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
      const long = await callTool('create_work', { title: 'x'.repeat(100_000) });
      expect(toolError(long)).toEqual({ status: 400, code: 'validation_failed' });
      const nul = await callTool('create_work', { title: 'a\u0000b' });
      expect(toolError(nul)).toEqual({ status: 400, code: 'validation_failed' });
      const lone = await send(
        `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":"create_work","arguments":{"title":"\\ud800"}}}`,
      );
      expect(toolError(lone)).toEqual({ status: 400, code: 'validation_failed' });
    });
  });

  it('wrong types anywhere in the message are JSON-RPC or tool errors, never internal ones', async () => {
    await app.expectUnchanged(async () => {
      const messages: unknown[] = [
        { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'create_work', arguments: ['title'] } },
        { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'create_work', arguments: 'title' } },
        { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 42, arguments: {} } },
        { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } },
        { jsonrpc: '2.0', id: nextId++, method: 'tools/call' },
        { jsonrpc: '2.0', id: nextId++, method: 'resources/read', params: { uri: 42 } },
        { jsonrpc: '2.0', id: nextId++, method: 'resources/read', params: {} },
        { jsonrpc: '2.0', id: { nested: true }, method: 'tools/list' },
        { jsonrpc: '1.0', id: nextId++, method: 'tools/list' },
        [{ jsonrpc: '2.0', id: nextId++, method: 'tools/list' }],
        'null',
        '42',
      ];
      for (const body of messages) {
        const answer = await send(body);
        expectNoFault(answer);
        expect(answer.message.error, JSON.stringify(body)).toBeDefined();
      }
      for (const args of [
        { title: 42 },
        { title: ['a'] },
        { title: { a: 1 } },
        { title: 'ok', priority: 'extreme' },
        { title: 'ok', estimate_hours: 'ten' },
        { title: 'ok', idempotency_key: 42 },
      ]) {
        const answer = await callTool('create_work', args);
        expect(answer.message.result?.isError, `${JSON.stringify(args)} ${JSON.stringify(answer.message)}`).toBe(true);
        expect(toolError(answer).status, JSON.stringify(args)).toBe(400);
      }
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });

  it('left no stack, no internal error and no failed request in the log', () => {
    const lines = capturedLogLines();
    const faults = lines.filter(
      (l) =>
        l.level === 'error' ||
        (typeof l.status === 'number' && l.status >= 500) ||
        /stack|Maximum call stack|RangeError/i.test(JSON.stringify(l)),
    );
    expect(faults).toEqual([]);
  });
});
