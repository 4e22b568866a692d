/**
 * Running a mutation: one transaction for the service's writes, its ledger events and, when the
 * operation is idempotent and the request carries an Idempotency-Key, the stored response.
 */
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
import type { ApiContext } from './trpc';

export interface MutationOptions<T> {
  /** Status of a first, successful execution. */
  status: number;
  /**
   * For idempotent operations: how a stored response is shown on replay (status 200). Without it
   * the Idempotency-Key header is validated and otherwise ignored (forward compatibility).
   */
  replay?: (stored: T) => T;
  /**
   * The operation's output schema (given to `.output()` through checkedInTransaction). The body is
   * checked against it before commit, so a response the API could not send never leaves its writes
   * (or a stored replay) behind, and is what the operation answers.
   */
  output: { parse(body: unknown): unknown };
  /**
   * The operation appends only at COMMIT (appendEventsAtCommit) and takes no ledger lock before
   * (lockWorkspaceLedger, appendEvents refuse): its transaction may be shared with writes to other
   * workspaces (db/group.ts, shared groups). POST /work, the agents' hot path, says so.
   */
  acrossWorkspaces?: boolean;
}

/** Bodies runMutation has checked against their operation's output schema, inside the transaction. */
const checkedBodies = new WeakSet<object>();
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
const PATCHED = Symbol('checkedInTransaction');

interface Parser {
  parse(value: unknown, params?: unknown): unknown;
  parseAsync(value: unknown, params?: unknown): Promise<unknown>;
  [PATCHED]?: true;
}

/**
 * The output schema of a procedure whose body runMutation checks before commit (so that a body the
 * API could not send never leaves its writes behind). tRPC checks a procedure's output again once
 * it returns; with this, a body runMutation has already checked passes through as it is, and
 * anything else (a replayed response) is checked as usual: every output is checked once.
 *
 * tRPC takes the schema's parse function when `.output()` is called, so the schema's own parse is
 * wrapped (the object stays the same: the OpenAPI document and its component ids see no change).
 */
export function checkedInTransaction<S extends Parser>(schema: S): S {
  if (schema[PATCHED]) return schema;
  const parse = schema.parse.bind(schema);
  const parseAsync = schema.parseAsync.bind(schema);
  const seen = (value: unknown) => typeof value === 'object' && value !== null && checkedBodies.has(value);
  schema.parse = (value, params) => (seen(value) ? value : parse(value, params));
  schema.parseAsync = async (value, params) => (seen(value) ? value : parseAsync(value, params));
  schema[PATCHED] = true;
  return schema;
}

export async function runMutation<T>(ctx: ApiContext, actor: Actor, opts: MutationOptions<T>, work: (tx: Tx) => Promise<T>): Promise<T> {
  const { db, env } = ctx.runtime;
  const key = actor.trace.idempotencyKey;
  const replay = opts.replay;
  const checked = async (tx: Tx) => {
    const body = opts.output.parse(await work(tx)) as T;
    if (typeof body === 'object' && body !== null) checkedBodies.add(body);
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
    ctx.runtime.wakeups.committed(actor.workspaceId);
    ctx.res.status = opts.status;
    return body;
  }

  const workspaceId = actor.workspaceId;
  // The body as sent, canonicalised: key order and whitespace do not matter, values do.
  const fingerprint = digestOf({ method: ctx.method, path: ctx.path.replace(/\/+$/, ''), body: ctx.body ?? null });
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
  ctx.runtime.wakeups.committed(workspaceId);
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
