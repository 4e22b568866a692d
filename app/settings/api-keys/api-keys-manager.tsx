'use client';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { messageOf, trpc } from '../../_lib/trpc-client';

interface Key {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const day = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : '—');

export function ApiKeysManager({ workspaceId, keys }: { workspaceId: string; keys: Key[] }) {
  const router = useRouter();
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const name = String(new FormData(form).get('name') ?? '');
    setBusy(true);
    setError(null);
    try {
      const key = await trpc.apiKeys.create.mutate({ workspace_id: workspaceId, name });
      setSecret(key.secret);
      form.reset();
      router.refresh();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  async function revoke(key: Key) {
    if (!window.confirm(`Revoke ${key.name} (${key.prefix}…)? Requests with it are refused at once.`)) return;
    setError(null);
    try {
      await trpc.apiKeys.revoke.mutate({ workspace_id: workspaceId, key_id: key.id });
      router.refresh();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  return (
    <div className="stack">
      <form className="toolbar" onSubmit={create}>
        <label>
          New key name
          <input type="text" name="name" required maxLength={100} placeholder="e.g. research agent" />
        </label>
        <button type="submit" className="primary" disabled={busy}>
          Create key
        </button>
      </form>
      {secret && (
        <div className="panel" role="status">
          <p>
            <strong>Copy this key now.</strong> It will not be shown again.
          </p>
          <p className="secret" data-testid="new-key">
            {secret}
          </p>
        </div>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <table className="keys">
        <caption className="muted" style={{ textAlign: 'left' }}>
          {keys.length} key{keys.length === 1 ? '' : 's'}
        </caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr key={k.id}>
              <td>{k.name}</td>
              <td>
                <code>{k.prefix}…</code>
              </td>
              <td>{day(k.created_at)}</td>
              <td>{day(k.last_used_at)}</td>
              <td>
                {k.revoked_at ? (
                  <span className="badge">revoked</span>
                ) : (
                  <button type="button" className="link-button" onClick={() => void revoke(k)} aria-label={`Revoke ${k.name}`}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
