/**
 * Escalation: when a step of a pending decision's policy comes due (`after_seconds`
 * since it was raised), the people the step names are told and may rule from then on, at the stage
 * the decision waits at. Each step reached is a `decision.escalated` event by the system actor,
 * which webhooks deliver and the live inbox shows; an email goes to each person named after it
 * commits. A leased job (one instance at a time) runs every second off decisions_escalation_due_idx.
 */
import { and, asc, eq, inArray, lte } from 'drizzle-orm';
import type { Database, Tx } from '@/db';
import { decisions, users, workspaces } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import { isStoreUnavailable } from '@/server/errors';
import { INSTANCE_ID, releaseLease, takeLease } from '@/server/job-lease';
import { describeError, log } from '@/server/log';
import { sendMail, type Mail } from '@/server/mail';
import type { Runtime } from '@/server/runtime';
import { systemActor } from '../actor';
import { applyTimeout } from './timeouts';
import { escalate } from './decide';
import { membersOf } from './workspace-policy';
import { rowChanges } from './write';

const BATCH = 100;
const LEASE = 'decision-escalation';
const LEASE_MS = 30_000;

interface Escalated {
  decisionId: string;
  workspaceId: string;
  title: string;
  /** The members the steps reached name, to tell. */
  notified: string[];
}

/** Reaches every step of the decision that is due by `now` (decide.ts escalate); what it reached, or null when nothing was due. */
async function escalateIfDue(tx: Tx, workspaceId: string, decisionId: string, now: Date): Promise<Escalated | null> {
  await lockWorkspaceLedger(tx, workspaceId); // the lock order of every change to existing decisions
  const [row] = await tx
    .select()
    .from(decisions)
    .where(and(eq(decisions.id, decisionId), eq(decisions.workspaceId, workspaceId)));
  // A ruling, a timeout or another instance's pass that committed first wins.
  if (!row) return null;
  const members = row.status === 'pending' && row.policy ? await membersOf(tx, workspaceId) : [];
  const escalated = escalate(row, members, now);
  if (escalated.kind === 'time_out') await applyTimeout(tx, workspaceId, row, now);
  if (escalated.kind !== 'escalated') return null;
  await tx.update(decisions).set(rowChanges(escalated.changes)).where(eq(decisions.id, decisionId));
  const actor = await systemActor(tx, workspaceId, 'system:decision-escalation');
  await appendEvents(tx, actor, escalated.events, now);
  return { decisionId, workspaceId, title: row.title, notified: escalated.notified };
}

/** The messages an escalation sends: one to each person it reached, with the link to rule. */
async function escalationMails(runtime: Runtime, escalated: Escalated): Promise<Mail[]> {
  if (escalated.notified.length === 0) return [];
  const people = await runtime.db.select({ email: users.email }).from(users).where(inArray(users.id, escalated.notified));
  const [ws] = await runtime.db.select({ name: workspaces.name }).from(workspaces).where(eq(workspaces.id, escalated.workspaceId));
  const link = new URL(`/decisions/${escalated.decisionId}`, runtime.env.APP_URL).toString();
  const text = [
    `A decision in ${ws?.name ?? 'your workspace'} has waited past its policy's escalation time, and it now comes to you.`,
    '',
    escalated.title,
    '',
    `You may rule on it: ${link}`,
  ].join('\n');
  return people.map((p) => ({ to: p.email, subject: `Escalated to you: ${escalated.title}`, text }));
}

/**
 * One pass: reaches every escalation step that is due, unless another instance holds the job's
 * lease (then null); mails the people reached once each step has committed. One decision that
 * cannot be escalated is logged and passed over.
 */
export async function escalateDueDecisions(runtime: Runtime, opts: { now?: Date; holder?: string } = {}): Promise<number | null> {
  const { db } = runtime;
  const holder = opts.holder ?? INSTANCE_ID;
  if (!(await takeLease(db, LEASE, LEASE_MS, holder))) return null;
  const now = opts.now ?? new Date();
  let count = 0;
  try {
    for (;;) {
      const due = await dueDecisions(db, now);
      let passed = 0;
      for (const d of due) {
        let escalated: Escalated | null = null;
        try {
          escalated = await db.transaction((tx) => escalateIfDue(tx, d.workspaceId, d.id, now));
        } catch (err) {
          if (isStoreUnavailable(err)) throw err;
          log('error', 'decision escalation failed', { decisionId: d.id, error: describeError(err) });
        }
        if (!escalated) {
          passed++;
          continue;
        }
        count++;
        // Email is a nudge, not the record (the event is): sent after the commit, never retried.
        if (runtime.env.SMTP_URL) {
          const mails = await escalationMails(runtime, escalated).catch(() => []);
          await Promise.all(mails.map((mail) => sendMail(runtime.env, mail)));
        }
      }
      // Everything left was passed over: stop rather than read the same rows again.
      if (due.length < BATCH || passed === due.length) return count;
    }
  } finally {
    await releaseLease(db, LEASE, holder);
  }
}

function dueDecisions(db: Database, now: Date) {
  return db
    .select({ id: decisions.id, workspaceId: decisions.workspaceId })
    .from(decisions)
    .where(and(eq(decisions.status, 'pending'), lte(decisions.nextEscalationAt, now)))
    .orderBy(asc(decisions.nextEscalationAt))
    .limit(BATCH);
}
