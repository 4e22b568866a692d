/** Small formatting helpers shared by pages. */
export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}

export function when(iso: string): string {
  return new Date(iso).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

/** What each decision shape asks, in words (the API's name stays a hover away). */
export const SHAPE_LABELS: Record<string, string> = {
  generic: 'A question to approve or decline',
  artifact_review: 'Review of a deliverable',
  icp_confirm: 'Confirm the ideal customer profile',
  budget_approval: 'Budget approval',
  handoff_route: 'Where the work goes next',
  plan_adjust: 'A change to the plan',
  task_restart: 'Restart a task',
  escalation: 'An escalation',
  option_select: 'Pick one option',
  option_multiselect: 'Pick one or more options',
};

/** What happens once the decision is approved (attention.continuation.strategy). */
export const CONTINUATION_LABELS: Record<string, string> = {
  resume_session: 'the paused run resumes where it stopped',
  restart_task: 'the task starts again with a new run',
  manual: 'nothing automatic: the agent decides what to do',
};

/** Where the web interface shows what an event recorded; the aggregate's own history otherwise. */
export function recordedAt(event: { aggregateType: string; aggregateId: string }): string {
  switch (event.aggregateType) {
    case 'decision':
      return `/decisions/${event.aggregateId}`;
    case 'initiative':
      return `/initiatives/${event.aggregateId}`;
    case 'task':
      return `/tasks/${event.aggregateId}`;
    default:
      return `/ledger?aggregate=${event.aggregateId}`;
  }
}

/** Where a ledger event is shown on /ledger (its sequence), from a history entry. */
export function eventLink(sequence: number): string {
  return `/ledger?at=${sequence}#event-${sequence}`;
}

/** A moment to the minute, for tables ("2025-03-01 14:05"), in UTC as the service records it. */
export function minute(iso: string): string {
  return iso.slice(0, 16).replace('T', ' ');
}
