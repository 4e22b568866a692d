/**
 * Running a write: one transaction for the service's writes, its ledger events and, when the
 * operation is idempotent and the request carries an Idempotency-Key, the stored response. The
 * answer is checked against the operation's output schema inside it, before COMMIT, so a response
 * the API could not send never leaves its writes (or a stored replay) behind. Procedures reach it
 * through the `write` their builder gives them (procedures.ts), with the schema of their `.output()`.
 */
import { TRPCError, type AnyTRPCProcedure } from '@trpc/server';
import type { Tx } from '@/db';
import { atCommit } from '@/db/connection';
import {
  claimIdempotencyKey,
  IdempotencyKeyTaken,
  storedResponse,
  storeIdempotentResponse,
  storeSealedResponseAtCommit,
} from '@/server/domain/idempotency';
import { appendAtCommitOf } from '@/server/ledger/append';
import { fillText, fillValue } from '@/server/ledger/stand-ins';
import { digestOf } from '@/server/ledger/canonical';
import type { Actor } from '@/server/domain/actor';
import type { ApiContext } from './context';
import { replaceOutputStep, type OutputStep } from './trpc-internals';

/** A schema's check: the parsed value, or a throw. */
export interface OutputCheck<T> {
  parse(body: unknown): T;
}

export interface MutationOptions<T> {
  /** Status of a first, successful execution. */
  status: number;
  /**
   * For idempotent operations: how a stored response is shown on replay (status 200). Without it
   * the Idempotency-Key header is validated and otherwise ignored (forward compatibility).
   */
  replay?: (stored: T) => T;
  /** The operation's output schema: the body is checked against it before commit, and is what the operation answers. */
  output: OutputCheck<T>;
  /**
   * The operation appends only at COMMIT (appendEventsAtCommit) and takes no ledger lock before
   * (lockWorkspaceLedger, appendEvents refuse): its transaction may be shared with writes to other
   * workspaces (db/group.ts, shared groups). POST /work, the agents' hot path, says so.
   */
  acrossWorkspaces?: boolean;
}

/** Bodies runMutation (or a batch: batch.ts) has checked against their operation's output schema, inside the transaction. */
const checkedBodies = new WeakSet<object>();

/**
 * What an Idempotency-Key is bound to: the method, the path and the body as sent, canonicalised (key
 * order and whitespace do not matter, values do). A retry with another fingerprint is 422.
 */
export function requestFingerprint(ctx: Pick<ApiContext, 'method' | 'path' | 'body'>): string {
  return digestOf({ method: ctx.method, path: ctx.path.replace(/\/+$/, ''), body: ctx.body ?? null });
}

/** Marks `body` as checked against its operation's output schema (checkOutputOnce passes it as it is). */
export function markChecked(body: unknown): void {
  if (typeof body === 'object' && body !== null) checkedBodies.add(body);
}

/**
 * The JSON text of a procedure's result: the text runMutation stored for its Idempotency-Key when
 * there is one (kept on the request's context, not in a WeakMap keyed by the body: V8's scavenger
 * keeps a WeakMap's values alive as long as their entry, which promoted every response text to the
 * old generation; db/connection.ts transactionLocals).
 */
export function jsonText(ctx: Pick<ApiContext, 'res'>, data: unknown): string {
  const stored = ctx.res.serialised;
  return stored && stored.body === data ? stored.text : JSON.stringify(data);
}

/**
 * Makes `procedure`'s output step pass the bodies runMutation has checked as they are, and check
 * anything else (a replayed response, an answer completed after COMMIT) as tRPC's own step does:
 * every output is checked once, and a checked body stays the very object whose JSON text
 * runMutation kept (jsonText).
 *
 * tRPC builds the step when `.output()` is called, from the schema's parse function; the procedure
 * keeps `.output()` (the OpenAPI document reads the schema from it), and its step is swapped
 * (trpc-internals.ts, where every reach into tRPC's internals is).
 */
export function checkOutputOnce(procedure: AnyTRPCProcedure, schema: OutputCheck<unknown>): void {
  const step: OutputStep = async ({ next }) => {
    const result = await next();
    if (!result.ok || (typeof result.data === 'object' && result.data !== null && checkedBodies.has(result.data))) return result;
    let data: unknown;
    try {
      // Synchronously: every output schema here is (tRPC's own step also tries parseAsync, for schemas that need it).
      data = schema.parse(result.data);
    } catch (cause) {
      // As tRPC's own step words it.
      throw new TRPCError({ message: 'Output validation failed', code: 'INTERNAL_SERVER_ERROR', cause });
    }
    return { ...result, data };
  };
  replaceOutputStep(procedure, step);
}

/**
 * Runs `work` in the write's transaction and answers its body, checked by `opts.output` before
 * COMMIT (procedures.ts types `work` by the schema's input).
 */
export async function runMutation<T>(
  ctx: ApiContext,
  actor: Actor,
  opts: MutationOptions<T>,
  work: (tx: Tx) => Promise<unknown>,
): Promise<T> {
  const { db, env } = ctx.runtime;
  const key = actor.trace.idempotencyKey;
  const replay = opts.replay;
  const checked = async (tx: Tx) => {
    const body = opts.output.parse(await work(tx));
    markChecked(body);
    return body;
  };
  // The append a service left for COMMIT (appendEventsAtCommit): its stand-ins in the body are
  // swapped for their values once it has run.
  let sealing: ReturnType<typeof appendAtCommitOf>;
  if (!key || !replay) {
    const body = await db.transaction(
      async (tx) => {
        const done = await checked(tx);
        sealing = appendAtCommitOf(tx);
        return done;
      },
      // Writes to one workspace that arrive together share a transaction (db/group.ts); with
      // acrossWorkspaces, writes to other workspaces may join them.
      { group: actor.workspaceId, acrossWorkspaces: opts.acrossWorkspaces },
    );
    if (sealing) fillValue(body, sealedValues(sealing.standIns, await sealing.values));
    ctx.res.status = opts.status;
    return body;
  }

  const workspaceId = actor.workspaceId;
  const fingerprint = requestFingerprint(ctx);
  // The write takes two flights to PostgreSQL, not one per statement: BEGIN, the claim and the
  // service's first statements go together (db/postgres.ts sends BEGIN with what follows it), and
  // the stored response goes with COMMIT (behind the append, when the service left it for COMMIT).
  // The claim fails when the key is taken, and so does everything sent behind it: the transaction
  // (or, when the write shares its transaction with others to the workspace, its savepoint: db/group.ts)
  // rolls back having changed nothing.
  let body: T;
  let text: string;
  try {
    body = await db.transaction(
      async (tx) => {
        const [claim, done] = await Promise.allSettled([
          claimIdempotencyKey(tx, workspaceId, key, fingerprint, env.IDEMPOTENCY_TTL_HOURS),
          checked(tx),
        ]);
        if (claim.status === 'rejected') throw claim.reason;
        if (done.status === 'rejected') throw done.reason;
        text = JSON.stringify(done.value);
        sealing = appendAtCommitOf(tx);
        // Left for COMMIT, so that it goes out with it (a failed store rolls the transaction back
        // and fails it with the store's error).
        if (sealing) storeSealedResponseAtCommit(tx, workspaceId, key, opts.status, text, sealing);
        else atCommit(tx, () => storeIdempotentResponse(tx, workspaceId, key, opts.status, text));
        return done.value;
      },
      { group: workspaceId, acrossWorkspaces: opts.acrossWorkspaces },
    );
  } catch (err) {
    if (!(err instanceof IdempotencyKeyTaken)) throw err;
    const previous = await storedResponse(db, workspaceId, key, fingerprint);
    ctx.res.status = 200;
    return replay(previous.body as T);
  }
  if (sealing) {
    const values = await sealing.values;
    fillValue(body, sealedValues(sealing.standIns, values));
    text = fillText(text!, sealing.standIns, values);
  }
  ctx.res.serialised = { body, text: text! };
  ctx.res.status = opts.status;
  return body;
}

/** Stand-in → value, both as they are in a body: numbers for the integers, strings for the hashes. */
function sealedValues(standIns: readonly string[], values: readonly string[]): Map<string | number, string | number> {
  const sealed = new Map<string | number, string | number>();
  standIns.forEach((standIn, i) => {
    const numeric = /^[0-9]+$/.test(standIn);
    sealed.set(numeric ? Number(standIn) : standIn, numeric ? Number(values[i]) : values[i]!);
  });
  return sealed;
}
