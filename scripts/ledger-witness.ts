/**
 * npm run ledger:witness -- --url <api base> --state <file> [--once] [--interval <s>] [--timeout <s>] [--vkey <vkey>]
 *   with the workspace's API key in AWS_API_KEY, or in the file --key-file names (never on the
 *   command line: scripts/cli.ts says why)
 * A witness of one workspace's ledger that anyone holding an API key of it can run, from anywhere
 * (server/ledger/witness.ts): each round it fetches the newest checkpoint, checks its signature
 * against the pinned log key and its consistency with the last checkpoint it kept, keeps it, and
 * hands back its cosignature. No database: only the REST API and the state file. The workspace
 * keeps the cosignatures of the witnesses its owners named only: until then a round says so and
 * prints the request that names it (its key is kept in the state file, so the request stays good).
 * Every request is bounded in time (--timeout, 30 s by default, headers and body together) and in
 * size, and goes only to --url: a redirect is an error, never followed. SIGTERM or SIGINT ends the
 * wait between rounds at once, and aborts a round's request in flight (exit 1, the state unchanged).
 * Exit status 0 when every round was consistent, 3 when the log signed something that does not
 * extend what the witness saw (the output says which sizes and roots disagree), 1 on other errors.
 */
import { hostname } from 'node:os';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  readState,
  restApi,
  witnessRound,
  witnessVkey,
  writeState,
  WitnessAlarm,
  WitnessNotNamed,
  WitnessStopped,
} from '@/server/ledger/witness';
import { parseVkey } from '@/server/ledger/note';
import { parseCli, readApiKey, usageError } from './cli';

/** The log signed something that does not extend what this witness saw. */
const INCONSISTENT = 3;

const cli = {
  command: 'ledger:witness',
  summary: 'witnesses a workspace’s ledger: checks each signed checkpoint extends the last one it saw, and cosigns it.',
  usage: [
    '--url <api base> --state <file> [--key-file <file>] [--once] [--interval <s>] [--timeout <s>] [--vkey <vkey>] [--name <witness name>]   (the key in AWS_API_KEY, or in --key-file)',
  ],
  options: {
    url: { type: 'string', value: '<api base>', description: 'the API, e.g. https://aws.example.com/api/v1', required: true },
    'key-file': {
      type: 'string',
      value: '<file|->',
      description: 'a file holding an API key of the workspace to witness (- reads it from standard input; default: AWS_API_KEY)',
    },
    state: {
      type: 'string',
      value: '<file>',
      description: 'where the witness keeps its key, the pinned log key and the last checkpoint',
      required: true,
    },
    once: { type: 'boolean', description: 'one round, then exit' },
    interval: { type: 'string', value: '<s>', description: 'seconds between rounds', default: '60' },
    timeout: {
      type: 'string',
      value: '<s>',
      description: 'seconds one request may take, headers and body (past it the round fails, exit 1)',
      default: String(DEFAULT_REQUEST_TIMEOUT_MS / 1000),
    },
    vkey: { type: 'string', value: '<vkey>', description: 'pin this log key (default: the key the log lists on the first round)' },
    name: { type: 'string', value: '<name>', description: 'the witness’s key name, on the first round (default witness.<host>)' },
  },
  notes: [
    'Exit 3: the log signed a checkpoint that does not extend what this witness saw, or with another key.',
    'AWS_API_KEY: the workspace API key, when --key-file is not given (never on the command line, where others can read it).',
    'A redirect from the service is an error (its status and Location are named), never followed.',
    'SIGTERM or SIGINT: stops between rounds at once; during a round, aborts its request and exits 1 with the state unchanged.',
  ],
} as const;
const values = parseCli(cli);
const seconds = Number(values.interval);
if (!Number.isFinite(seconds) || seconds < 1) usageError(cli, '--interval takes a number of seconds, at least 1');
const timeout = Number(values.timeout);
if (!Number.isFinite(timeout) || timeout <= 0 || timeout > 3600)
  usageError(cli, '--timeout takes a number of seconds, more than 0 and at most 3600');
if (values.vkey) {
  try {
    parseVkey(values.vkey);
  } catch (err) {
    usageError(cli, `--vkey: ${(err as Error).message}`);
  }
}

const key = await readApiKey(cli, values['key-file']);
// A signal ends the wait between rounds at once, and aborts a request in flight.
const stopper = new AbortController();
let stopping = false;
let wake = () => {};
const stop = (signal: NodeJS.Signals) => {
  stopping = true;
  stopper.abort(signal);
  wake();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
const api = restApi(values.url!, key, { timeoutMs: timeout * 1000, stop: stopper.signal });

async function round(): Promise<number> {
  const state = await readState(values.state!, values.name ?? `witness.${hostname()}`);
  if (values.vkey) state.logVkey = values.vkey;
  try {
    const done = await witnessRound(api, state);
    await writeState(values.state!, state);
    const from = done.from === null ? 'first checkpoint seen' : `consistent with size ${done.from}`;
    console.log(`OK size ${done.size} root ${done.root} (${from}); cosigned as ${witnessVkey(state)}`);
    return 0;
  } catch (err) {
    if (err instanceof WitnessStopped) {
      console.error(`Stopped by ${String(stopper.signal.reason)}: ${err.message}; the state file is unchanged.`);
      return 1;
    }
    if (err instanceof WitnessAlarm) {
      console.error(`INCONSISTENT: ${err.message}`);
      return INCONSISTENT;
    }
    if (err instanceof WitnessNotNamed) {
      // The checkpoint checked out: keep it, and the key the owner is asked to name.
      await writeState(values.state!, state);
      console.error(notNamed(err.vkey));
      return 1;
    }
    console.error((err as Error).message);
    return 1;
  }
}

/** What a newcomer reads when the workspace does not know this witness yet: the exact request an owner sends. */
function notNamed(vkey: string): string {
  const body = JSON.stringify({ vkey }).replaceAll("'", `'\\''`);
  return [
    `NOT NAMED: the workspace keeps cosignatures only from the witnesses its owners name, and not yet from ${vkey}.`,
    'An owner names this witness, with an API key of the workspace in OWNER_KEY:',
    `  curl -s -X POST ${values.url!.replace(/\/+$/, '')}/ledger/witnesses -H "Authorization: Bearer $OWNER_KEY" -H 'content-type: application/json' -d '${body}'`,
    `Then run the witness again: it keeps its key in ${values.state}.`,
  ].join('\n');
}

let code = await round();
while (!values.once && code !== INCONSISTENT && !stopping) {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, seconds * 1000);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  if (stopping) break;
  code = await round();
}
process.exit(code);
