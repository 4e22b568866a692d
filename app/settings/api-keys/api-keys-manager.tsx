'use client';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { ShownOnce } from '../../_components/shown-once';
import { messageOf, trpc } from '../../_lib/trpc-client';
import { copyText } from '../../_lib/use-action';
import { plural } from '@/server/words';

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
  // The new key, shown once: until it is copied, dismissed, or revoked.
  const [revealed, setRevealed] = useState<{ id: string; name: string; secret: string } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
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
      setRevealed({ id: key.id, name: key.name, secret: key.secret });
      setNotice(null);
      form.reset();
      router.refresh();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  async function copy() {
    if (!revealed) return;
    if (!(await copyText(revealed.secret))) {
      setError('Copying failed: select the key and copy it by hand.');
      return;
    }
    setRevealed(null);
    setNotice(`Copied the key “${revealed.name}”. It is not shown again.`);
  }

  async function revoke(key: Key) {
    if (!window.confirm(`Revoke ${key.name} (${key.prefix}…)? Requests with it are refused at once.`)) return;
    setError(null);
    try {
      await trpc.apiKeys.revoke.mutate({ workspace_id: workspaceId, key_id: key.id });
      // A revoked key is no use to anyone: stop showing it.
      if (revealed?.id === key.id) setRevealed(null);
      setNotice(`Revoked the key “${key.name}”.`);
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
      {revealed && (
        <ShownOnce
          label="New API key"
          value={revealed.secret}
          testId="new-key"
          copyLabel="Copy key"
          onCopy={() => void copy()}
          onDismiss={() => setRevealed(null)}
        >
          <strong>Copy the key “{revealed.name}” now.</strong> It will not be shown again.
        </ShownOnce>
      )}
      {notice && (
        <p role="status" className="success">
          {notice}
        </p>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <table className="keys">
        <caption className="muted" style={{ textAlign: 'left' }}>
          {plural(keys.length, 'key')}
        </caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
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
                  <span className="badge">Revoked {day(k.revoked_at)}</span>
                ) : (
                  <span className="badge status-approved">Active</span>
                )}
              </td>
              <td>
                {!k.revoked_at && (
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
