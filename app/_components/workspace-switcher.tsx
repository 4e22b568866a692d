'use client';
/**
 * The header's workspace switcher: the current workspace, and the user's others to move to, each
 * with the decisions waiting in it (so one waiting elsewhere is not missed). A plain form (it works
 * without script); choosing another workspace submits it at once. Switching from a page of one
 * decision, initiative or task lands on a list of the new workspace, since that resource belongs
 * to the old one.
 */
import { usePathname } from 'next/navigation';
import type { WorkspaceChoice } from '../_lib/session';
import { waitingWords, type WorkspaceWaiting } from '../_lib/waiting';

function landing(path: string): string {
  const resource = /^\/(decisions|initiatives|tasks)\/[^/]+/.exec(path);
  if (!resource) return path;
  // A task is shown within its initiative; there is no list of tasks of its own.
  return resource[1] === 'tasks' ? '/initiatives' : `/${resource[1]}`;
}

export function WorkspaceSwitcher({
  workspaces,
  current,
  waiting,
}: {
  workspaces: WorkspaceChoice[];
  current: WorkspaceChoice;
  waiting: WorkspaceWaiting[];
}) {
  const path = usePathname() ?? '/decisions';
  const byId = new Map(waiting.map((w) => [w.workspace_id, w]));
  return (
    <form className="workspace-switcher" method="post" action="/workspaces/switch" aria-label="Workspace">
      <input type="hidden" name="return" value={landing(path)} />
      <label>
        <span className="visually-hidden">Current workspace</span>
        <select name="workspace" defaultValue={current.id} onChange={(e) => e.currentTarget.form?.requestSubmit()}>
          {workspaces.map((w) => (
            <option key={w.id} value={w.id}>
              {w.name} ({w.role}){waitingWords(byId.get(w.id))}
            </option>
          ))}
        </select>
      </label>
      <noscript>
        <button type="submit">Switch</button>
      </noscript>
    </form>
  );
}
