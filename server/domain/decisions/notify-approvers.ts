/**
 * Email for the people who rule: each attention request on a decision mails the workspace's
 * approvers and owners (one message each, so nobody sees the others' addresses) with the
 * decision's title, the agent's recommendation, what waiting costs and the link to rule.
 *
 * Sent after the request has committed and without holding up the agent's answer: email is a
 * nudge, not part of the record (the attention record and its ledger event are). With SMTP_URL
 * unset nothing is read or sent. A failure is logged by server/mail.ts and not retried.
 */
import { and, eq, inArray } from 'drizzle-orm';
import { decisionAttention, decisions, memberships, users, workspaces } from '@/db/schema';
import { sendMail, type Mail, type MailOutcome } from '@/server/mail';
import { describeError, log } from '@/server/log';
import type { Runtime } from '@/server/runtime';

const WAITING_COSTS_UNSAID = 'The agent did not say.';

/** The messages an attention request on `decisionId` sends, one per approver or owner. */
async function attentionMails(runtime: Runtime, decisionId: string): Promise<Mail[]> {
  const { db, env } = runtime;
  const [row] = await db
    .select({ decision: decisions, attention: decisionAttention, workspaceName: workspaces.name })
    .from(decisions)
    .innerJoin(decisionAttention, eq(decisionAttention.decisionId, decisions.id))
    .innerJoin(workspaces, eq(workspaces.id, decisions.workspaceId))
    .where(eq(decisions.id, decisionId));
  if (!row || row.decision.status !== 'pending') return [];
  const { decision, attention } = row;
  const recipients = await db
    .select({ email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.workspaceId, decision.workspaceId), inArray(memberships.role, ['owner', 'approver'])));
  const link = new URL(`/decisions/${decision.id}`, env.APP_URL).toString();
  const recommended = decision.options.find((o) => o.id === attention.recommendedOptionId);
  const recommendation =
    [recommended ? `${recommended.label} (${recommended.id})` : null, attention.recommendationNote || null].filter(Boolean).join(': ') ||
    'None given.';
  const text = [
    `An agent asks for your ruling in ${row.workspaceName}${attention.requestCount > 1 ? ` (asked ${attention.requestCount} times)` : ''}.`,
    '',
    decision.title,
    ...(decision.description ? ['', decision.description] : []),
    '',
    `Urgency: ${decision.urgency}${decision.dueAt ? `, due ${decision.dueAt.toISOString()}` : ''}`,
    `Recommendation: ${recommendation}`,
    `What waiting costs: ${attention.impactIfDelayed || WAITING_COSTS_UNSAID}`,
    '',
    `Rule on it: ${link}`,
    '',
    `You get this as an approver or owner of ${row.workspaceName}.`,
  ].join('\n');
  const subject = `Ruling needed: ${decision.title}`;
  return recipients.map((r) => ({ to: r.email, subject, text }));
}

/** Sends the attention request's messages; resolves with each outcome (never rejects). */
export async function notifyApprovers(runtime: Runtime, decisionId: string): Promise<MailOutcome[]> {
  if (!runtime.env.SMTP_URL) return [];
  const mails = await attentionMails(runtime, decisionId).catch((err: unknown) => {
    log('warn', 'attention email not sent: the decision could not be read', { decisionId, error: describeError(err) });
    return [];
  });
  return Promise.all(mails.map((mail) => sendMail(runtime.env, mail)));
}
