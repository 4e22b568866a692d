/**
 * Grouped transactions: concurrent writes to one workspace share one transaction, so they share
 * one BEGIN, one COMMIT, one WAL flush, and one acquisition of the workspace's append lock
 * (docs/contract.md §5.6). PostgreSQL cannot group the commits of appends to one workspace by itself: each
 * append holds the workspace's lock until its COMMIT's flush is done, so the next one waits for
 * it.
 *
 * How: `db.transaction(work, { group: workspaceId })` joins the group of that key that is open in
 * this process, or opens one. The participants run one after the other on the group's transaction
 * (one connection runs one statement stream), each but the first behind a SAVEPOINT, sent with its
 * first statement (no round trip of its own). A participant that fails is rolled back to its savepoint
 * and only it fails: the others' work stands. The first participant has no savepoint (most groups have
 * one participant, and then the transaction is the same as an ungrouped one); if it fails, the
 * transaction is rolled back and the participants waiting behind it start a new group (none of them
 * had run). When the last participant is done and no other is waiting, the group commits, with the
 * statements its participants left for COMMIT (db/connection.ts atCommit), in participant order: the ledger
 * appends take their sequences in that order. Every participant is answered after COMMIT: its result,
 * its own error, or, when COMMIT fails, the transaction's error (nothing of the group was written).
 *
 * A group takes at most MAX_PARTICIPANTS participants: each savepoint is a subtransaction, and a backend
 * keeps 64 subtransaction ids in shared memory; past that every snapshot taken anywhere has to
 * read pg_subtrans.
 *
 * Shared groups (`acrossWorkspaces`, docs/contract.md §5.6): a write that takes its workspace's ledger lock
 * only at COMMIT (its appends are left for it, and it locks nothing of the ledger before) may also
 * share a transaction with such writes to other workspaces. Over many workspaces, writes to one
 * workspace seldom arrive together, so per-workspace groups have one participant; shared groups still
 * save a BEGIN, a COMMIT and a WAL flush per participant. Workspaces are spread over `sharedGroups`
 * keys (DB_SHARED_GROUPS, default 2; by a hash of the workspace id), because one group's participants
 * run one after the other on one connection: a single key would make every such write in the
 * process wait for that one connection. Such a group's COMMIT takes several workspaces' ledger locks; so that two of them
 * committing at once can never deadlock, their statements left for COMMIT are sent in workspace
 * order (participant order within a workspace), and a participant of a shared group may not take a ledger
 * lock before COMMIT (sharedAcrossWorkspaces; server/ledger/append.ts refuses). When one participant's
 * append times out waiting for its workspace's lock (held by another transaction), the participants
 * writing to that workspace fail with it; the others, writes to other workspaces, run again in a
 * new group.
 */
import { AT_COMMIT, TX_LOCALS, markMoved, movedIn, transactionLocals, type CommitStatement } from './connection';

/** At most this many participants share a transaction (under PostgreSQL's 64 cached subtransactions). */
export const MAX_PARTICIPANTS = 32;

/** Marks, in a participant's transaction locals, a participant of a shared group. */
const ACROSS_WORKSPACES = Symbol('shared across workspaces');

/** Whether `tx` is a participant's view of a transaction shared with writes to other workspaces. */
export function sharedAcrossWorkspaces(tx: object): boolean {
  return transactionLocals(tx)?.[ACROSS_WORKSPACES] === true;
}

type Work<Tx> = (tx: Tx) => Promise<unknown>;

interface Participant<Tx> {
  work: Work<Tx>;
  /** The workspace it writes to: the order of its statements left for COMMIT in a shared group. */
  workspace: string;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  outcome?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

interface Group<Tx> {
  participants: Participant<Tx>[];
  /** Whether its participants write to several workspaces (acrossWorkspaces). */
  shared: boolean;
  /** Set when the group takes no more participants (about to commit, or done). */
  closed: boolean;
}

/** The runner `db.transaction` uses for grouped calls, over the engine's own (ungrouped) transaction. */
export function groupedTransactions<Tx extends object>(
  transaction: <T>(work: (tx: Tx) => Promise<T>) => Promise<T>,
  run: (tx: Tx, text: string) => Promise<unknown>,
  sharedGroups = 2,
): <T>(workspace: string, work: (tx: Tx) => Promise<T>, acrossWorkspaces?: boolean) => Promise<T> {
  const open = new Map<string, Group<Tx>>();

  const close = (key: string, group: Group<Tx>) => {
    group.closed = true;
    if (open.get(key) === group) open.delete(key);
  };

  async function runGroup(key: string, group: Group<Tx>): Promise<void> {
    const { participants } = group;
    // Who failed the transaction on their own: the first participant in its work (there is no
    // savepoint to go back to), or a participant whose statement left for COMMIT failed (the
    // statements after it in that flight fail with it).
    let culprit: Participant<Tx> | undefined;
    try {
      await transaction(async (tx) => {
        const left = (tx as { [AT_COMMIT]: CommitStatement[] })[AT_COMMIT];
        const txLocals = transactionLocals(tx)!;
        const leftBy: { participant: Participant<Tx>; own: CommitStatement[] }[] = [];
        // Participants may join while earlier ones run: the loop reads the length each time round.
        for (let i = 0; i < participants.length; i++) {
          const participant = participants[i]!;
          const own: CommitStatement[] = [];
          const locals: Record<symbol, unknown> = group.shared ? { [ACROSS_WORKSPACES]: true } : {};
          let savepoint: Promise<unknown> | undefined;
          if (i > 0) {
            savepoint = run(tx, 'savepoint participant');
            savepoint.catch(() => undefined);
          }
          try {
            const value = await participant.work(participantView(tx, own, locals));
            await savepoint;
            leftBy.push({ participant, own });
            // The ledgers it moved are the transaction's now (the engine tells of them after
            // COMMIT); a participant rolled back to its savepoint below took its appends back, and
            // tells of nothing.
            for (const workspaceId of movedIn(locals) ?? []) markMoved(txLocals, workspaceId);
            participant.outcome = { ok: true, value };
          } catch (error) {
            participant.outcome = { ok: false, error };
            if (i === 0) {
              culprit = participant;
              throw error;
            }
            // Its own changes only (the most recent savepoint of that name is its own); a failure
            // here (the connection lost) fails the whole group below.
            await run(tx, 'rollback to savepoint participant');
          }
        }
        close(key, group);
        // In workspace order (a stable sort: participant order within a workspace), so that every
        // shared group takes the ledger locks of its workspaces in one order (see the top).
        if (group.shared)
          leftBy.sort((a, b) =>
            a.participant.workspace < b.participant.workspace ? -1 : a.participant.workspace > b.participant.workspace ? 1 : 0,
          );
        for (const { participant, own } of leftBy) for (const send of own) left.push(blaming(participant, send));
      });
    } catch (err) {
      close(key, group);
      if (culprit) {
        // The transaction was rolled back because of one participant: it alone is answered with its
        // error. The participants that succeeded, or had not run yet, run again in a new group (none
        // of their work was written); those that had failed on their own are answered so.
        const error = culprit.outcome?.ok === false ? culprit.outcome.error : err;
        culprit.reject(error);
        // A lock timeout on the culprit's workspace would meet the other writes to that
        // workspace too: they are answered with it rather than wait for the lock again.
        const lockedOut = isLockTimeout(error) ? culprit.workspace : undefined;
        const again: Participant<Tx>[] = [];
        for (const m of participants) {
          if (m === culprit) continue;
          if (m.outcome && !m.outcome.ok) m.reject(m.outcome.error);
          else if (m.workspace === lockedOut) m.reject(error);
          else again.push({ ...m, outcome: undefined });
        }
        if (again.length > 0) void runGroup(key, openGroup(key, group.shared, again));
        return;
      }
      // The transaction failed as a whole (the connection, COMMIT itself): nothing was written.
      for (const m of participants) m.reject(m.outcome && !m.outcome.ok ? m.outcome.error : err);
      return;
    }
    for (const m of participants) {
      if (m.outcome?.ok) m.resolve(m.outcome.value);
      else m.reject(m.outcome?.error);
    }

    /** `send`, which blames `participant` if its statement is the first to fail on its own account. */
    function blaming(participant: Participant<Tx>, send: CommitStatement): CommitStatement {
      return () => {
        const sent = send();
        sent.catch((err: unknown) => {
          if (culprit === undefined && (isOwnFailure(err) || (group.shared && isLockTimeout(err)))) {
            culprit = participant;
            participant.outcome = { ok: false, error: err };
          }
        });
        return sent;
      };
    }
  }

  const openGroup = (key: string, shared: boolean, participants: Participant<Tx>[]): Group<Tx> => {
    const group: Group<Tx> = { participants, shared, closed: false };
    open.set(key, group);
    return group;
  };

  return <T>(workspace: string, work: (tx: Tx) => Promise<T>, acrossWorkspaces = false) =>
    new Promise<T>((resolve, reject) => {
      const participant: Participant<Tx> = { work, workspace, resolve: resolve as (value: unknown) => void, reject };
      const key = acrossWorkspaces ? sharedKey(workspace, sharedGroups) : workspace;
      const joined = open.get(key);
      if (joined && !joined.closed && joined.participants.length < MAX_PARTICIPANTS) joined.participants.push(participant);
      else void runGroup(key, openGroup(key, acrossWorkspaces, [participant]));
    });
}

/** The shared group a workspace's writes join: one of `groups`, by a hash (FNV-1a) of its id. */
function sharedKey(workspace: string, groups: number): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < workspace.length; i++) hash = Math.imul(hash ^ workspace.charCodeAt(i), 0x01000193);
  return `shared:${(hash >>> 0) % groups}`;
}

/**
 * A lock timeout (55P03). In a shared group, when a participant's statement left for COMMIT times out
 * waiting for its workspace's ledger lock (another transaction holds it: a rebuild, a long import),
 * the writes to that workspace fail and the others run again without them; in a workspace's own
 * group every participant waits for the same lock, and all fail.
 */
function isLockTimeout(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '55P03';
}

/**
 * Whether a statement failed because of what it did (a constraint, a trigger's exception, a check
 * of ours): an error with a SQLSTATE outside the classes that say the database or the transaction
 * could not go on (08 connection, 25P02 already aborted, 40 rollback, 53 resources, 55P03 lock
 * timeout, 57 operator intervention).
 */
function isOwnFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|25P02|40|53|55P03|57)/.test(code);
}

/**
 * The group's transaction as one participant sees it: the same connection and statements, and its own
 * list of statements left for COMMIT, taken into the group's only if the participant succeeds, and its
 * own transaction locals (db/connection.ts: its pending ledger append; the ledgers it moved, taken
 * into the group's only if it succeeds; whether it is shared across workspaces).
 */
function participantView<Tx extends object>(tx: Tx, own: CommitStatement[], locals: Record<symbol, unknown>): Tx {
  return new Proxy(tx, {
    get: (target, prop) => (prop === AT_COMMIT ? own : prop === TX_LOCALS ? locals : Reflect.get(target, prop)),
  });
}
