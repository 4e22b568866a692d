/**
 * Email, for invitations: sent through SMTP_URL with nodemailer when it is set, not at all when it
 * is not (the owner then copies the link from the page). A failure to send is reported to the
 * caller, never thrown past it: the invitation exists either way and its link is still shown once.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import type { Env } from './env';
import { describeError, log } from './log';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export type MailOutcome = { sent: true } | { sent: false; reason: 'not_configured' | 'failed' };

const transports = new Map<string, Transporter>();

function transportFor(url: string): Transporter {
  let t = transports.get(url);
  if (!t) {
    // Bounded waits: a mail server that does not answer must not hold an owner's request for minutes.
    t = nodemailer.createTransport(url, { connectionTimeout: 5_000, greetingTimeout: 5_000, socketTimeout: 10_000 });
    transports.set(url, t);
  }
  return t;
}

export async function sendMail(env: Env, mail: Mail): Promise<MailOutcome> {
  if (!env.SMTP_URL) return { sent: false, reason: 'not_configured' };
  try {
    await transportFor(env.SMTP_URL).sendMail({ from: env.MAIL_FROM, to: mail.to, subject: mail.subject, text: mail.text });
    return { sent: true };
  } catch (err) {
    // The recipient's domain and the error: never the body (it holds the link), nor the address
    // (a person's, often one a request gave).
    log('warn', 'email not sent', { toDomain: mail.to.split('@').pop() ?? '', error: describeError(err) });
    return { sent: false, reason: 'failed' };
  }
}
