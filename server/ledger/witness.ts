/**
 * A witness of a workspace's ledger (npm run ledger:witness): it keeps the last checkpoint it saw,
 * and each round fetches the newest one, checks its signature against the log key it pinned, and
 * checks that it extends the one kept (a consistency proof, RFC 9162). Only then does it keep the
 * new one and hand back its cosignature (C2SP tlog-cosignature), which the service serves with the
 * checkpoint. A log that signed something not extending what the witness saw (a smaller tree, a
 * failed proof, another root at the same size, another key) is caught here, outside the operator's
 * reach: the round says which sizes and roots disagree.
 *
 * It talks to the service only through its public REST API, and keeps its state in one JSON file:
 * its own key (made on the first round), the pinned log key, and the last checkpoint.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import {
  COSIGNATURE_ED25519,
  cosignatureLine,
  generateNoteKey,
  noteKeyFromSeed,
  parseCheckpoint,
  parseNote,
  parseVkey,
  verifyNote,
  vkeyOf,
} from './note';
import { verifyConsistency } from './merkle';

export interface WitnessState {
  format: 'aws-witness-state/1';
  /** The witness's own cosignature key: its name and 32-byte seed (base64). */
  witness: { name: string; seed: string };
  /** The log key pinned on the first round (or given with --vkey). */
  logVkey: string | null;
  /** The last checkpoint seen and found consistent. */
  checkpoint: { size: number; root: string; note: string } | null;
}

/** Why a round fails: the log misbehaved (exit 3), or the round could not be done (exit 1). */
export class WitnessAlarm extends Error {
  override readonly name = 'WitnessAlarm';
}

/**
 * The checkpoint checked out, but the workspace keeps cosignatures only from the witnesses its
 * owners named, and this one is not (yet): `vkey` is what an owner names. The state holds the
 * checkpoint and the witness's key, to be kept (the next round then cosigns with the same key).
 */
export class WitnessNotNamed extends Error {
  override readonly name = 'WitnessNotNamed';
  constructor(
    message: string,
    readonly vkey: string,
  ) {
    super(message);
  }
}

export async function readState(file: string, name: string): Promise<WitnessState> {
  try {
    const state = JSON.parse(await readFile(file, 'utf8')) as WitnessState;
    if (state.format !== 'aws-witness-state/1') throw new Error(`${file} is not a witness state file`);
    return state;
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
    const key = generateNoteKey(name, COSIGNATURE_ED25519);
    return { format: 'aws-witness-state/1', witness: { name, seed: key.seed.toString('base64') }, logVkey: null, checkpoint: null };
  }
}

/** Writes the state whole or not at all (a rename over the old file). */
export async function writeState(file: string, state: WitnessState): Promise<void> {
  await writeFile(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

export function witnessVkey(state: WitnessState): string {
  return vkeyOf(noteKeyFromSeed(state.witness.name, Buffer.from(state.witness.seed, 'base64'), COSIGNATURE_ED25519));
}

/** The service's REST API as the witness uses it: GET and POST with its key, JSON back. */
export type Api = (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/**
 * The most of an answer the witness reads. A checkpoint with its cosignatures and a consistency
 * proof are a few KiB; the log the witness watches is not trusted to keep its answers small.
 */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** The answer's body as JSON (null when it is not), read up to MAX_ANSWER_BYTES; throws past that. */
async function boundedJson(res: Response, what: string): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = res.body?.getReader();
  for (let read = await reader?.read(); reader && read && !read.done; read = await reader.read()) {
    bytes += read.value.byteLength;
    if (bytes > MAX_ANSWER_BYTES) {
      await reader.cancel();
      throw new Error(`${what}: the answer is over ${MAX_ANSWER_BYTES / 1024 / 1024} MiB, more than a checkpoint or a proof`);
    }
    chunks.push(read.value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return null;
  }
}

/** How long one request may take, headers and body, unless --timeout says otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** A round given up because the witness was told to stop (SIGTERM, SIGINT) while a request was in flight. */
export class WitnessStopped extends Error {
  override readonly name = 'WitnessStopped';
}

export interface RestOptions {
  /** The most one request may take, from sending it to the last byte of its answer. */
  timeoutMs?: number;
  /** Aborted to give up at once whatever is in flight (the tool's signal handler). */
  stop?: AbortSignal;
}

/**
 * The REST API as a witness of an untrusted log talks to it: each request bounded in time (a
 * server that sends headers and then nothing, or never answers, cannot hold the witness), in size
 * (boundedJson), and sent only where --url says: a redirect is an error naming its status and
 * Location, never followed (the witness's key would go with it).
 */
export function restApi(base: string, key: string, options: RestOptions = {}): Api {
  const root = base.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  return async (method, path, body) => {
    const what = `${method} ${path}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.stop ? AbortSignal.any([timeout, options.stop]) : timeout;
    try {
      const res = await fetch(`${root}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal,
      });
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel();
        const location = res.headers.get('location');
        throw new Error(
          `${what}: the service answered ${res.status} redirecting to ${location === null ? '(no Location)' : JSON.stringify(location)}; ` +
            'a witness follows no redirect: give the API’s own address with --url',
        );
      }
      return { status: res.status, body: await boundedJson(res, what) };
    } catch (err) {
      if (options.stop?.aborted) throw new WitnessStopped(`${what} was in flight and is abandoned`);
      if (timeout.aborted) throw new Error(`${what}: no complete answer within ${timeoutMs / 1000} s (--timeout)`);
      throw err;
    }
  };
}

async function ok(api: Api, method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
  const res = await api(method, path, body);
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${res.body?.error?.message ?? ''}`.trim());
  return res.body.data;
}

export interface Round {
  size: number;
  root: string;
  /** The size the new checkpoint was checked against (null on the first round). */
  from: number | null;
  cosigned: boolean;
}

/**
 * One round: fetch, check, keep, cosign. Throws WitnessAlarm when the log signed something that
 * does not extend what this witness saw; the state is then left as it was.
 */
export async function witnessRound(api: Api, state: WitnessState, now = new Date()): Promise<Round> {
  const checkpoint = await ok(api, 'GET', '/ledger/checkpoint');
  if (!state.logVkey) {
    const keys = (await ok(api, 'GET', '/ledger/keys')) as { vkey: string; retired_at: string | null }[];
    const current = keys.find((k) => k.retired_at === null);
    if (!current) throw new Error('the log lists no current key');
    state.logVkey = current.vkey;
  }
  const log = parseVkey(state.logVkey);
  // Only the log's own signature line is checked and kept: other witnesses' lines are theirs.
  const { text, signatures } = parseNote(checkpoint.note);
  const own = signatures.find((s) => s.name === log.name && s.keyId.equals(log.keyId));
  if (!own || !verifyNote(`${text}\n${own.line}`, log)) {
    throw new WitnessAlarm(`the checkpoint of size ${checkpoint.tree_size} is not signed by the pinned key ${state.logVkey}`);
  }
  const signed = parseCheckpoint(text);
  const root = signed.root.toString('base64');
  const seen = state.checkpoint;
  if (seen) {
    const seenOrigin = parseCheckpoint(parseNote(seen.note).text).origin;
    if (seenOrigin !== signed.origin) throw new WitnessAlarm(`the log's origin changed from ${seenOrigin} to ${signed.origin}`);
    if (signed.size < seen.size) {
      throw new WitnessAlarm(
        `the log signed size ${signed.size} (root ${root}) after size ${seen.size} (root ${seen.root}): a smaller tree`,
      );
    }
    if (signed.size === seen.size && root !== seen.root) {
      throw new WitnessAlarm(`the log signed two roots at size ${signed.size}: ${seen.root} before, ${root} now`);
    }
    if (signed.size > seen.size) {
      const proof = await ok(api, 'GET', `/ledger/proofs/consistency?from=${seen.size}&to=${signed.size}`);
      const path = (proof.consistency_path as string[]).map((h) => Buffer.from(h, 'base64'));
      if (!verifyConsistency(seen.size, signed.size, path, Buffer.from(seen.root, 'base64'), signed.root)) {
        throw new WitnessAlarm(
          `the tree of size ${signed.size} (root ${root}) does not extend the one of size ${seen.size} (root ${seen.root}): the consistency proof fails`,
        );
      }
    }
  }
  const note = `${text}\n${own.line}`;
  state.checkpoint = { size: signed.size, root, note };
  const key = noteKeyFromSeed(state.witness.name, Buffer.from(state.witness.seed, 'base64'), COSIGNATURE_ED25519);
  const line = cosignatureLine(text, key, Math.floor(now.getTime() / 1000));
  const sent = await api('POST', '/ledger/cosignatures', { note: note + line, witness_vkey: vkeyOf(key) });
  if (sent.status === 403 && sent.body?.error?.code === 'witness_not_named') {
    throw new WitnessNotNamed(sent.body.error.message, vkeyOf(key));
  }
  if (sent.status !== 200) throw new Error(`POST /ledger/cosignatures: ${sent.status} ${sent.body?.error?.message ?? ''}`.trim());
  return { size: signed.size, root, from: seen?.size ?? null, cosigned: true };
}
