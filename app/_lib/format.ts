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

export const EVENT_LABELS: Record<string, string> = {
  'decision.created': 'Raised',
  'decision.attention_requested': 'Attention requested',
  'decision.approved': 'Approved',
  'decision.declined': 'Declined',
  'decision.expired': 'Expired',
  'decision.cancelled': 'Cancelled',
};
