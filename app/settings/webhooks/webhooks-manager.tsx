'use client';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import type { DeliveryView, WebhookEndpointView } from '@/server/domain/webhooks/endpoints';
import { ConfirmButton } from '../../_components/confirm';
import { DataTable } from '../../_components/data-table';
import { Field } from '../../_components/field';
import { Messages } from '../../_components/messages';
import { ShownOnce } from '../../_components/shown-once';
import { when } from '../../_lib/format';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';
import { plural } from '@/server/words';

/** An endpoint as the API shows it, with its latest delivery attempts. */
type Endpoint = WebhookEndpointView & { recent: DeliveryView[] };

/** "decision.*, run.completed" → ["decision.*", "run.completed"]; empty → every event. */
function typesOf(text: string): string[] {
  const types = text
    .split(/[\s,]+/)
    .map((t) => t.trim())
    .filter(Boolean);
  return types.length > 0 ? types : ['*'];
}

const TYPES_HINT = (
  <>
    Comma-separated; a prefix like <code>decision.*</code> takes every event under it; empty for every event.
  </>
);

export function WebhooksManager({ workspaceId, endpoints }: { workspaceId: string; endpoints: Endpoint[] }) {
  const router = useRouter();
  const { busy, error, notice, run, setError, setNotice } = useAction();
  // A secret, shown once: the new endpoint's, or a rotation's.
  const [revealed, setRevealed] = useState<{ url: string; secret: string } | null>(null);

  const create = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    void run(async () => {
      const created = await trpc.webhooks.create.mutate({
        workspace_id: workspaceId,
        url: String(data.get('url') ?? ''),
        event_types: typesOf(String(data.get('types') ?? '')),
        description: String(data.get('description') ?? ''),
      });
      setRevealed({ url: created.data.url, secret: created.data.secret });
      form.reset();
      router.refresh();
    });
  };

  const change = (e: Endpoint, event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    void run(async () => {
      await trpc.webhooks.update.mutate({
        id: e.id,
        url: String(data.get('url') ?? ''),
        event_types: typesOf(String(data.get('types') ?? '')),
        description: String(data.get('description') ?? ''),
      });
      router.refresh();
      return `Saved the endpoint ${String(data.get('url'))}.`;
    });
  };

  const act = (e: Endpoint, what: 'test' | 'rotate' | 'disable' | 'enable' | 'delete') =>
    run(async () => {
      if (what === 'test') {
        const sent = await trpc.webhooks.test.mutate({ id: e.id });
        router.refresh();
        return `Test event ${sent.data.sequence} recorded; it is delivered to ${e.url} next.`;
      }
      if (what === 'rotate') {
        const rotated = await trpc.webhooks.rotateSecret.mutate({ id: e.id });
        setRevealed({ url: e.url, secret: rotated.data.secret });
        router.refresh();
        return;
      }
      if (what === 'delete') {
        await trpc.webhooks.delete.mutate({ id: e.id });
        router.refresh();
        return `Deleted the endpoint ${e.url}.`;
      }
      await trpc.webhooks.update.mutate({ id: e.id, enabled: what === 'enable' });
      router.refresh();
      return what === 'enable' ? `Enabled ${e.url}: delivery resumes where it stopped.` : `Disabled ${e.url}.`;
    });

  return (
    <div className="stack">
      <form className="stack panel" onSubmit={create} aria-label="New endpoint">
        <Field label="Endpoint URL">
          <input type="url" name="url" required maxLength={2000} placeholder="https://example.com/hooks/aws" />
        </Field>
        <Field label="Event types" hint={TYPES_HINT}>
          <input type="text" name="types" placeholder="decision.*, run.completed" />
        </Field>
        <Field label="Description">
          <input type="text" name="description" maxLength={500} placeholder="e.g. Slack bridge" />
        </Field>
        <div>
          <button type="submit" className="primary" disabled={busy}>
            Add endpoint
          </button>
        </div>
      </form>
      {revealed && (
        <ShownOnce
          label="Signing secret"
          value={revealed.secret}
          noun="the secret"
          testId="signing-secret"
          copyLabel="Copy secret"
          onClose={(copied) => {
            setRevealed(null);
            if (copied) setNotice(`Copied the signing secret of ${revealed.url}. It is not shown again.`);
          }}
          onError={setError}
        >
          <strong>Copy the signing secret of {revealed.url} now.</strong> It will not be shown again.
        </ShownOnce>
      )}
      <Messages error={error} notice={notice} />
      {endpoints.length === 0 && <p className="muted">No endpoints yet.</p>}
      {endpoints.map((e) => (
        <section key={e.id} className="panel" aria-label={`Endpoint ${e.url}`}>
          <h2 className="break">
            <code>{e.url}</code>{' '}
            <span className={`badge ${e.status === 'enabled' ? 'status-approved' : 'status-declined'}`}>{e.status}</span>
          </h2>
          {e.description && <p>{e.description}</p>}
          <p className="muted">
            Events: {e.event_types.map((t) => (t === '*' ? 'every event' : t)).join(', ')}. Delivered up to event{' '}
            {e.delivery.delivered_sequence}
            {e.delivery.attempts > 0 &&
              `; failing, ${plural(e.delivery.attempts, 'attempt')} so far${e.delivery.next_attempt_at ? `, next ${when(e.delivery.next_attempt_at)}` : ''}`}
            .
          </p>
          {e.disabled_reason && <p className="error">{e.disabled_reason}</p>}
          <div className="actions">
            <button type="button" onClick={() => void act(e, 'test')} disabled={busy}>
              Send test event
            </button>
            <ConfirmButton
              name={`Rotate the secret of ${e.url}`}
              busy={busy}
              tone="primary"
              question={
                <>
                  Rotate the secret of <code>{e.url}</code>? The old one keeps signing for 24 hours.
                </>
              }
              confirmLabel="Confirm rotate"
              onConfirm={() => act(e, 'rotate')}
            >
              Rotate secret
            </ConfirmButton>
            <button type="button" onClick={() => void act(e, e.status === 'enabled' ? 'disable' : 'enable')} disabled={busy}>
              {e.status === 'enabled' ? 'Disable' : 'Enable'}
            </button>
            <ConfirmButton
              name={`Delete ${e.url}`}
              busy={busy}
              question={
                <>
                  Delete the endpoint <code>{e.url}</code>? Nothing more is sent to it.
                </>
              }
              confirmLabel="Confirm delete"
              onConfirm={() => act(e, 'delete')}
            >
              Delete
            </ConfirmButton>
          </div>
          <details>
            <summary>Change</summary>
            <form className="stack" onSubmit={(event) => change(e, event)} aria-label={`Change ${e.url}`}>
              <Field label="Endpoint URL">
                <input type="url" name="url" required maxLength={2000} defaultValue={e.url} />
              </Field>
              <Field label="Event types" hint={TYPES_HINT}>
                <input type="text" name="types" defaultValue={e.event_types.join(', ')} />
              </Field>
              <Field label="Description">
                <input type="text" name="description" maxLength={500} defaultValue={e.description} />
              </Field>
              <div>
                <button type="submit" disabled={busy}>
                  Save
                </button>
              </div>
            </form>
          </details>
          <details open={e.recent.length > 0}>
            <summary>Recent deliveries</summary>
            {e.recent.length === 0 ? (
              <p className="muted">None yet.</p>
            ) : (
              <DataTable
                caption={`Recent deliveries to ${e.url}`}
                captionHidden
                columns={[
                  { label: 'When', lead: true },
                  { label: 'Event' },
                  { label: 'Attempt' },
                  { label: 'Answer' },
                  { label: 'Took' },
                  { label: 'Next retry' },
                ]}
                rows={e.recent.map((d) => ({
                  key: d.id,
                  cells: [
                    when(d.attempted_at),
                    <>
                      {d.sequence} <code>{d.event_type}</code>
                    </>,
                    d.attempt,
                    d.succeeded ? `${d.status_code} delivered` : (d.error ?? `HTTP ${d.status_code}`),
                    `${d.duration_ms} ms`,
                    d.next_attempt_at ? when(d.next_attempt_at) : '—',
                  ],
                }))}
              />
            )}
          </details>
        </section>
      ))}
    </div>
  );
}
