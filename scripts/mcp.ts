/**
 * node scripts/tool.mjs mcp --url <service address>   (the key in AWS_API_KEY, or in --key-file)
 *
 * The form MCP clients are given: no npm between (its banner would be the first thing on stdout,
 * and some clients, the MCP Inspector among them, drop an inner `--`), nothing but the protocol on
 * stdout. `npm run --silent mcp -- --url …` runs the same.
 *
 * The service's MCP server for clients that start their servers as processes and speak over stdio
 * (Claude Code, Cursor, Claude Desktop …): a bridge from stdin/stdout to the service's /mcp
 * endpoint. Every message passes through as it is, both ways (tool calls, their progress,
 * elicitations, answers), so the tools are exactly those of /mcp and run on the service; this
 * process holds no logic and no database, only the session.
 *
 * A session the service no longer knows (it restarted, or the session sat idle past
 * MCP_SESSION_IDLE_MS) is opened again with the client's own initialize, and the message sent
 * again, without the client noticing. stdout carries the protocol only: what the bridge has to
 * say goes to stderr.
 */
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isJSONRPCRequest, type JSONRPCMessage, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { parseCli, readApiKey, usageError } from './cli';

const cli = {
  command: 'mcp',
  summary: 'serves the Accountable Work Service’s MCP tools over stdio, bridged to its /mcp endpoint.',
  usage: ['--url <service address> [--key-file <file>]   (with AWS_API_KEY set to an API key of the workspace, or --key-file)'],
  options: {
    url: {
      type: 'string',
      value: '<service address>',
      description: 'the service, e.g. http://localhost:3000 or https://aws.example.com/api/v1',
      required: true,
    },
    'key-file': {
      type: 'string',
      value: '<file>',
      description: 'a file holding the workspace API key the tools act with (default: AWS_API_KEY)',
    },
  },
  notes: [
    'AWS_API_KEY: the workspace API key the tools act with (never on the command line, where other users can read it).',
    'For an MCP client: command "node", arguments ["<this repository>/scripts/tool.mjs", "mcp", "--url", "http://localhost:3000"].',
  ],
} as const;
const values = parseCli(cli);
// Standard input carries the protocol: the key cannot come from it.
if (values['key-file'] === '-') usageError(cli, '--key-file - would read the key from the protocol’s input: name a file');
const apiKey = await readApiKey(cli, values['key-file']);
let endpoint: URL;
try {
  // The API base (…/api/v1) or the app's address: /mcp is at the root of either.
  endpoint = new URL('/mcp', values.url!);
} catch {
  usageError(cli, `--url: not a URL: ${values.url}`);
}

const say = (message: string) => process.stderr.write(`aws-mcp: ${message}\n`);
const local = new StdioServerTransport();
let initialize: JSONRPCRequest | null = null;
let protocolVersion: string | null = null;
let remote = open();

function open(): StreamableHTTPClientTransport {
  const transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } });
  if (protocolVersion) transport.setProtocolVersion(protocolVersion);
  transport.onmessage = (message) => {
    // The answer to initialize names the protocol version every later request must carry.
    if (initialize && 'result' in message && message.id === initialize.id) {
      const version = (message.result as { protocolVersion?: string }).protocolVersion;
      if (version) {
        protocolVersion = version;
        transport.setProtocolVersion(version);
      }
    }
    void local.send(message);
  };
  transport.onerror = (err) => say(err.message);
  return transport;
}

/** Opens a new session with the client's own initialize; its answer is not the client's to see again. */
async function reopen(): Promise<void> {
  const stale = remote;
  remote = open();
  stale.onmessage = undefined;
  await stale.close().catch(() => undefined);
  const handshake = initialize!;
  const answered = new Promise<void>((resolve) => {
    const forward = remote.onmessage!;
    remote.onmessage = (message) => {
      if ('id' in message && message.id === handshake.id) {
        remote.onmessage = forward;
        resolve();
        return;
      }
      forward(message);
    };
  });
  await remote.start();
  await remote.send(handshake);
  await answered;
  await remote.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  say('the service had ended the session; a new one is open');
}

async function forward(message: JSONRPCMessage): Promise<void> {
  if (isJSONRPCRequest(message) && message.method === 'initialize') initialize = message;
  try {
    await remote.send(message);
  } catch (err) {
    if (err instanceof StreamableHTTPError && err.code === 404 && initialize && message !== initialize) {
      await reopen();
      await remote.send(message);
      return;
    }
    throw err;
  }
}

local.onmessage = (message) => {
  forward(message).catch((err: unknown) => {
    const why = err instanceof Error ? err.message : String(err);
    say(why);
    // A request the service never answered gets an answer here, so the client does not wait on it.
    if (isJSONRPCRequest(message)) {
      void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: `${endpoint.href}: ${why}` } });
    }
  });
};
// The client closing stdin (or the transport closing) ends the session on the service too.
const end = () => {
  void remote
    .terminateSession()
    .catch(() => undefined)
    .finally(() => void remote.close().finally(() => process.exit(0)));
};
local.onclose = end;
process.stdin.once('end', end);
await remote.start();
await local.start();
