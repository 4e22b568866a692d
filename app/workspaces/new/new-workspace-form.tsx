'use client';
import type { FormEvent } from 'react';
import { Messages } from '../../_components/messages';
import { submitWorkspaceSwitch } from '../../_lib/switch-workspace';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';

export function NewWorkspaceForm() {
  const { busy, error, run } = useAction();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const name = String(new FormData(event.currentTarget).get('name') ?? '');
    void run(
      async () => {
        const created = await trpc.workspaces.create.mutate({ name });
        // Make it current and open its (empty) decisions.
        submitWorkspaceSwitch(created.id, '/decisions');
      },
      { keepBusy: true },
    );
  }

  return (
    <form className="stack" onSubmit={submit}>
      <label>
        Name
        <input name="name" type="text" required maxLength={100} autoFocus />
      </label>
      <Messages error={error} />
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Creating…' : 'Create workspace'}
      </button>
    </form>
  );
}
