'use client';
/**
 * The header's workspace switcher: the current workspace, and the user's others to move to. A
 * plain form (it works without script); choosing another workspace submits it at once. Switching
 * from a page of one decision or initiative lands on the list of the new workspace, since that
 * resource belongs to the old one.
 */
import { usePathname } from 'next/navigation';
import type { WorkspaceChoice } from '../_lib/session';

function landing(path: string): string {
  const resource = /^\/(decisions|initiatives)\/[^/]+/.exec(path);
  return resource ? `/${resource[1]}` : path;
}

export function WorkspaceSwitcher({ workspaces, current }: { workspaces: WorkspaceChoice[]; current: WorkspaceChoice }) {
  const path = usePathname() ?? '/decisions';
  return (
    <form className="workspace-switcher" method="post" action="/workspaces/switch" aria-label="Workspace">
      <input type="hidden" name="return" value={landing(path)} />
      <label>
        <span className="visually-hidden">Current workspace</span>
        <select name="workspace" defaultValue={current.id} onChange={(e) => e.currentTarget.form?.requestSubmit()}>
          {workspaces.map((w) => (
            <option key={w.id} value={w.id}>
              {w.name} ({w.role})
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
