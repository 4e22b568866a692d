/**
 * What a ledger event says happened, in words, and who did it: one table read by every page that
 * shows events (the ledger, a task's history, a decision's history), so that the same event reads
 * the same everywhere. The event type stays beside it, a hover or a click away.
 */

import type { EventType, PayloadOf } from '@/server/ledger/event-types';

type Payload = Record<string, unknown>;
/**
 * An event type's words: fixed, or made from its payload. The payload is whatever the ledger
 * stored, by any version (older events may lack a field): each field is read as maybe absent.
 */
type Phrase<T extends EventType> = string | ((payload: Partial<PayloadOf<T>>) => string);

/** A status as a person writes it: in_progress → in progress. */
const words = (value: unknown) => String(value ?? '').replaceAll('_', ' ');
/** `n thing` or `n things`. */
const counted = (n: number, thing: string) => `${n} ${thing}${n === 1 ? '' : 's'}`;

/** The first part of an event type: what kind of thing it happened to. */
type Prefix = EventType extends infer T ? (T extends `${infer P}.${string}` ? P : never) : never;

/** What each kind of aggregate is called, by the event type's first part. */
const SUBJECTS: Record<Prefix, string> = {
  workspace: 'Workspace',
  ledger: 'Ledger',
  membership: 'Member',
  invitation: 'Invitation',
  api_key: 'API key',
  webhook_endpoint: 'Webhook endpoint',
  initiative: 'Initiative',
  workstream: 'Workstream',
  milestone: 'Milestone',
  task: 'Task',
  work: 'Task',
  run: 'Run',
  receipt: 'Receipt',
  dedup: 'Dedup claim',
  decision: 'Decision',
  grant: 'Grant',
  passkey: 'Passkey',
  artifact: 'Artifact',
  decision_policy: 'Decision policy',
  witness: 'Witness',
  tool_call: 'Tool call',
  mcp_server: 'MCP server',
};

/**
 * What happened to the subject, by event type (lower case: it follows the subject's name). One
 * entry per type of the registry (server/domain/events.ts): a new type without its words does
 * not compile.
 */
export type EventPhrases = { [T in EventType]: Phrase<T> };

const PHRASES: EventPhrases = {
  'workspace.created': 'created',
  'ledger.key_added': (p) => (p.replaces ? `signing key ${p.key_id} replaced ${p.replaces}` : `signing key ${p.key_id} added`),
  'membership.created': (p) => `added as ${words(p.role)}`,
  'membership.role_changed': (p) => `role changed from ${words(p.from)} to ${words(p.to)}`,
  'membership.removed': 'removed',
  'membership.delegation_set': (p) => `away until ${p.until ?? '?'}, rulings delegated`,
  'membership.delegation_ended': 'back: rulings no longer delegated',
  'invitation.created': (p) => `sent, to join as ${words(p.role)}`,
  'invitation.accepted': 'accepted',
  'invitation.revoked': 'revoked',
  'api_key.created': 'created',
  'api_key.revoked': 'revoked',
  'webhook_endpoint.created': 'created',
  'webhook_endpoint.updated': 'changed',
  'webhook_endpoint.deleted': 'deleted',
  'webhook_endpoint.enabled': 'turned on',
  'webhook_endpoint.disabled': 'turned off',
  'webhook_endpoint.secret_rotated': 'given a new signing secret',
  'webhook_endpoint.test': 'sent a test delivery',
  'initiative.created': 'created',
  'initiative.paused': 'paused',
  'initiative.resumed': 'resumed',
  'initiative.cancelled': 'cancelled',
  'initiative.reopened': 'reopened',
  'workstream.created': 'created',
  'workstream.paused': 'paused',
  'workstream.resumed': 'resumed',
  'workstream.cancelled': 'cancelled',
  'workstream.reopened': 'reopened',
  'milestone.created': 'created',
  'milestone.paused': 'paused',
  'milestone.resumed': 'resumed',
  'milestone.cancelled': 'cancelled',
  'milestone.reopened': 'reopened',
  'task.created': 'created',
  'work.created': 'created',
  'task.updated': 'edited',
  'task.paused': 'paused',
  'task.resumed': 'resumed',
  'task.cancelled': 'cancelled',
  'task.status_changed': (p) => `moved to ${words(p.status)}`,
  'task.redispatched': 'sent out again with a new run',
  'run.created': 'created',
  'run.started': 'started',
  'run.paused': 'paused',
  'run.resumed': 'resumed',
  'run.cancelled': 'cancelled',
  'run.checkpointed': 'saved a checkpoint',
  'run.rolled_back': 'rolled back to a checkpoint',
  'run.released': 'released by its decision, still paused',
  'run.completed': 'completed',
  'run.failed': 'failed',
  'run.lease_renewed': 'kept its lease (heartbeat)',
  'run.lease_expired': 'lost its lease: its agent stopped heartbeating, and the task is ready again',
  'receipt.imported': 'imported',
  'dedup.claimed': 'taken',
  'dedup.extended': 'extended',
  'dedup.released': 'released',
  'dedup.pruned': 'cleared away after it ended',
  'decision.created': 'raised',
  'decision.attention_requested': 'brought to a human’s attention',
  'decision.approval_recorded': (p) =>
    `approval recorded${p.approval?.name ? ` from ${p.approval.name}` : ''}${p.approval?.stage ? ` towards ${p.approval.stage}` : ''}`,
  'decision.decline_recorded': (p) => `decline recorded${p.decline?.name ? ` from ${p.decline.name}` : ''}; the quorum can still be met`,
  'decision.escalated': (p) =>
    `escalated (step ${(p.step ?? 0) + 1}, after ${p.after_seconds ?? '?'} s) to ${p.notified?.length ?? 0} ${p.notified?.length === 1 ? 'member' : 'members'}`,
  'decision.approved': 'approved',
  'decision.declined': 'declined',
  'decision.expired': 'expired',
  'decision.cancelled': 'cancelled',
  'workspace.settings_changed': (p) =>
    // What changed: the retention of stored artifact bytes, or (as before it existed) the passkey policy.
    'artifact_content_days' in p && p.artifact_content_days !== p.previous_artifact_content_days
      ? `settings changed: stored artifact bytes kept ${p.artifact_content_days ? `${p.artifact_content_days} days` : 'for ever'}`
      : Array.isArray(p.passkey_urgencies) && p.passkey_urgencies.length > 0
        ? `settings changed: a passkey approves ${p.passkey_urgencies.join(', ')} decisions`
        : 'settings changed: no decision needs a passkey',
  'passkey.registered': 'added',
  'passkey.removed': 'removed',
  'grant.issued': 'issued for the approved action',
  'grant.consumed': 'used',
  'grant.refused': (p) =>
    p.reason === 'grant_mismatch'
      ? 'refused: another action'
      : p.reason === 'grant_expired'
        ? 'refused: expired'
        : 'refused: its task changed',
  'artifact.content_removed': (p) => (p.reason === 'retention' ? 'stored bytes removed by retention' : 'stored bytes removed'),
  'decision_policy.updated': (p) =>
    `rules set to version ${p.version ?? '?'}: ${p.rules?.length ?? 0} ${p.rules?.length === 1 ? 'rule' : 'rules'}`,
  'artifact.registered': (p) => `registered: ${words(p.artifact_type)}${p.title ? ` “${p.title}”` : ''}`,
  'witness.named': (p) => `${p.name ?? ''} named: its cosignatures are kept (key ${p.key_id ?? '?'})`,
  'witness.removed': (p) => `${p.name ?? ''} removed: its cosignatures are no longer kept`,
  'tool_call.forwarded': (p) =>
    `${p.tool ?? '?'} on ${p.server ?? '?'} sent to the server${p.grant_id ? ' with its approval (grant used)' : ' (allowed by its guard)'}`,
  'tool_call.returned': (p) => `answered${p.is_error ? ' with an error' : ''} in ${p.duration_ms ?? '?'} ms`,
  'tool_call.refused': (p) => `${p.tool ?? '?'} on ${p.server ?? '?'} not sent: ${words(p.reason)}`,
  'mcp_server.registered': (p) => `${p.name ?? ''} registered with ${counted(p.tools?.length ?? 0, 'tool')}`,
  'mcp_server.updated': (p) => {
    const what = [
      p.name !== undefined && `renamed ${p.name}`,
      p.target && `moved to ${p.target.host}`,
      p.header_names && 'headers replaced',
      p.guards && 'guards set',
      p.default_mode && `default ${p.default_mode}`,
      p.timeout_ms !== undefined && `timeout ${p.timeout_ms} ms`,
    ].filter(Boolean);
    return what.length > 0 ? `changed: ${what.join(', ')}` : 'changed';
  },
  'mcp_server.removed': (p) => `${p.name ?? ''} removed: its tools are no longer offered`,
  'mcp_server.tools_changed': (p) =>
    `${p.name ?? ''} tools changed: ${p.added?.length ?? 0} added, ${p.removed?.length ?? 0} removed, ${p.changed?.length ?? 0} changed`,
};

/** The words for a type as the page got it: a string, which a newer ledger may fill with a type this table does not know. */
function phraseOf(type: string): string | ((payload: Payload) => string) | undefined {
  if (!Object.hasOwn(PHRASES, type)) return undefined;
  // Any payload reads: every phrase reads its fields as maybe absent, and words() takes any value.
  return PHRASES[type as EventType] as string | ((payload: Payload) => string);
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export interface EventLike {
  eventType: string;
  payload?: Payload;
}

/**
 * The event in words. `subject: true` names what it happened to ("Task moved to done"), for a list
 * of many aggregates such as the ledger; without it the page already says ("Moved to done").
 * A type this table does not know yet still reads as words rather than as its code.
 */
export function eventWords(event: EventLike, opts: { subject?: boolean } = {}): string {
  const dot = event.eventType.indexOf('.');
  const prefix = dot < 0 ? event.eventType : event.eventType.slice(0, dot);
  const known = phraseOf(event.eventType);
  const phrase = typeof known === 'function' ? known(event.payload ?? {}) : (known ?? words(event.eventType.slice(dot + 1)));
  if (!opts.subject) return capital(phrase);
  const subject = Object.hasOwn(SUBJECTS, prefix) ? SUBJECTS[prefix as Prefix] : capital(words(prefix));
  return `${subject} ${phrase}`;
}

/**
 * Who did something, the one way every page names them: a person by their display name, an agent
 * by its API key's name (with what it is), or the system. Names are as they are now; the ids stay
 * in the ledger.
 */
export function actorLabel(type: string, name: string | null): string {
  if (type === 'human') return name ?? 'a member';
  if (type === 'api_key') return name ? `an agent (key “${name}”)` : 'an agent (a key since deleted)';
  return 'the system';
}
