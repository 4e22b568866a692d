/** What waits in each of a person's workspaces, in words (the header's switcher, the inbox). */

/** A workspace's pending decisions (decisions.acrossWorkspaces). */
export interface WorkspaceWaiting {
  workspace_id: string;
  pending: number;
  blocking: number;
}

/** " · 2 pending, 1 blocking", or nothing when none waits. */
export function waitingWords(w: WorkspaceWaiting | undefined): string {
  if (!w || w.pending === 0) return '';
  return ` · ${w.pending} pending${w.blocking > 0 ? `, ${w.blocking} blocking` : ''}`;
}
