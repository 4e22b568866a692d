'use client';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { ConfirmButton } from '../../_components/confirm';
import { DataTable } from '../../_components/data-table';
import { Field } from '../../_components/field';
import { Messages } from '../../_components/messages';
import { ShownOnce } from '../../_components/shown-once';
import { minute } from '../../_lib/format';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';
import { plural } from '@/server/words';

interface Key {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export function ApiKeysManager({ workspaceId, keys }: { workspaceId: string; keys: Key[] }) {
  const router = useRouter();
  const { busy, error, notice, run, setError, setNotice } = useAction();
  // The new key, shown once: until it is copied, dismissed, or revoked.
  const [revealed, setRevealed] = useState<{ id: string; name: string; secret: string } | null>(null);

  function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const name = String(new FormData(form).get('name') ?? '');
    void run(async () => {
      const key = await trpc.apiKeys.create.mutate({ workspace_id: workspaceId, name });
      setRevealed({ id: key.id, name: key.name, secret: key.secret });
      form.reset();
      router.refresh();
    });
  }

  const revoke = (key: Key) =>
    run(async () => {
      await trpc.apiKeys.revoke.mutate({ workspace_id: workspaceId, key_id: key.id });
      // A revoked key is no use to anyone: stop showing it.
      if (revealed?.id === key.id) setRevealed(null);
      router.refresh();
      return `Revoked the key “${key.name}”.`;
    });

  return (
    <div className="stack">
      <form className="toolbar" onSubmit={create}>
        <Field label="New key name">
          <input type="text" name="name" required maxLength={100} placeholder="e.g. research agent" />
        </Field>
        <button type="submit" className="primary" disabled={busy}>
          Create key
        </button>
      </form>
      {revealed && (
        <ShownOnce
          label="New API key"
          value={revealed.secret}
          noun="the key"
          testId="new-key"
          copyLabel="Copy key"
          onClose={(copied) => {
            setRevealed(null);
            if (copied) setNotice(`Copied the key “${revealed.name}”. It is not shown again.`);
          }}
          onError={setError}
        >
          <strong>Copy the key “{revealed.name}” now.</strong> It will not be shown again.
        </ShownOnce>
      )}
      <Messages error={error} notice={notice} />
      <DataTable
        caption={plural(keys.length, 'key')}
        columns={[
          { label: 'Name', lead: true },
          { label: 'Key' },
          { label: 'Created' },
          { label: 'Last used' },
          { label: 'State' },
          { label: 'Actions', hidden: true },
        ]}
        rows={keys.map((k) => ({
          key: k.id,
          cells: [
            k.name,
            <code>{k.prefix}…</code>,
            minute(k.created_at),
            k.last_used_at ? minute(k.last_used_at) : 'never',
            k.revoked_at ? (
              <span className="badge">Revoked {minute(k.revoked_at)}</span>
            ) : (
              <span className="badge status-approved">Active</span>
            ),
            k.revoked_at ? null : (
              <ConfirmButton
                name={`Revoke ${k.name}`}
                className="link-button"
                busy={busy}
                question={
                  <>
                    Revoke <strong>{k.name}</strong> (<code>{k.prefix}…</code>)? Requests with it are refused at once.
                  </>
                }
                confirmLabel="Confirm revoke"
                onConfirm={() => revoke(k)}
              >
                Revoke
              </ConfirmButton>
            ),
          ],
        }))}
      />
    </div>
  );
}
