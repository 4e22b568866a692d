/**
 * The gate of the owners' settings pages (members, API keys, webhooks): the signed-in user and the
 * current workspace when they own it, else the page that says who manages it.
 */
import type { ReactElement } from 'react';
import type { SessionUser } from '@/server/auth/session';
import { currentWorkspace, requireUser, type WorkspaceChoice } from '../_lib/session';

type Gate = { user: SessionUser; workspace: WorkspaceChoice; refused?: undefined } | { refused: ReactElement };

/** `title` heads the page; `manages` ends "Only the owners of … manage …". */
export async function ownersOnly(path: string, title: string, manages: string): Promise<Gate> {
  const user = await requireUser(path);
  const { current: workspace } = await currentWorkspace(user);
  if (workspace?.role === 'owner') return { user, workspace };
  return {
    refused: (
      <main>
        <h1>{title}</h1>
        <p>
          Only the owners of {workspace ? <strong>{workspace.name}</strong> : 'a workspace'} manage {manages}.
        </p>
      </main>
    ),
  };
}
