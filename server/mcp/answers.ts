/**
 * The answers of gateway calls not yet recorded (`tool_call.returned`). A call's answer goes to the
 * agent at once; its record follows, in the transaction of the next call to the same workspace (that
 * call's own record is a commit anyway, so the answer costs no commit of its own), or, when no call
 * comes within FLUSH_MS, in a transaction of its own. An agent calling tool after tool then pays
 * one commit a call, not two: the second commit of each call was the one the next call waited on.
 *
 * The call itself was recorded (`tool_call.forwarded`) before a byte went upstream: what waits here
 * is only what came back. Stopping records every answer still waiting (McpSessions.close).
 */
import type { Database, Tx } from '@/db';
import type { Actor } from '@/server/domain/actor';
import { recordReturned } from '@/server/domain/tool-calls/calls';
import type { PayloadOf } from '@/server/ledger/event-types';
import { describeError, log } from '@/server/log';

/** How long an answer waits for a call to ride with before it is recorded on its own. */
const FLUSH_MS = 20;

interface Answer {
  actor: Actor;
  returned: PayloadOf<'tool_call.returned'>;
}

export class PendingAnswers {
  private readonly waiting = new Map<string, { answers: Answer[]; timer: NodeJS.Timeout }>();
  /** Transactions of their own under way (stopping waits for them). */
  private readonly flushing = new Set<Promise<void>>();
  /** The database the answers go to (the process has one), known from the first answer. */
  private db: Database | null = null;

  /** An answer to record; written within FLUSH_MS unless a call to its workspace takes it first. */
  add(db: Database, actor: Actor, returned: PayloadOf<'tool_call.returned'>): void {
    this.putBack(db, actor.workspaceId, [{ actor, returned }]);
  }

  /** The workspace's answers waiting, for the caller's transaction to record (recordAnswers); put them back if it fails. */
  take(workspaceId: string): Answer[] {
    const held = this.waiting.get(workspaceId);
    if (!held) return [];
    clearTimeout(held.timer);
    this.waiting.delete(workspaceId);
    return held.answers;
  }

  /** Answers a transaction took and did not commit: they wait again. */
  putBack(db: Database, workspaceId: string, answers: Answer[]): void {
    if (answers.length === 0) return;
    this.db = db;
    const held = this.waiting.get(workspaceId);
    if (held) return void held.answers.push(...answers);
    const timer = setTimeout(() => this.flush(db, workspaceId, 0), FLUSH_MS);
    this.waiting.set(workspaceId, { answers: [...answers], timer });
  }

  /** Records the workspace's waiting answers in a transaction of their own; a failed write is tried again, three times. */
  private flush(db: Database, workspaceId: string, tries: number): void {
    const answers = this.take(workspaceId);
    if (answers.length === 0) return;
    const done: Promise<void> = db
      .transaction((tx) => recordAnswers(tx, answers), { group: workspaceId })
      .catch((err: unknown) => {
        if (tries < 3) {
          setTimeout(
            () => {
              this.putBack(db, workspaceId, answers);
              this.flush(db, workspaceId, tries + 1);
            },
            250 * 2 ** tries,
          ).unref();
          return;
        }
        log('error', 'mcp gateway: tool calls’ answers could not be recorded', {
          toolCallIds: answers.map((a) => a.returned.id),
          error: describeError(err),
        });
      })
      .finally(() => this.flushing.delete(done));
    this.flushing.add(done);
  }

  /** Records every answer still waiting, and waits for those being recorded. */
  async close(): Promise<void> {
    const db = this.db;
    if (db) for (const workspaceId of [...this.waiting.keys()]) this.flush(db, workspaceId, 3);
    while (this.flushing.size > 0) await Promise.all([...this.flushing]);
  }
}

/** Records `answers` in the caller's transaction, in the order they came. */
export async function recordAnswers(tx: Tx, answers: readonly Answer[]): Promise<void> {
  for (const { actor, returned } of answers) await recordReturned(tx, actor, returned);
}
