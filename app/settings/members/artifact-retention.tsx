'use client';
/**
 * How long the workspace keeps the stored bytes of artifacts: an owner's setting. The
 * retention job removes bytes last registered longer ago, each removal in the ledger; the digests
 * stay for ever, so a copy kept elsewhere still checks against them.
 */
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { Messages } from '../../_components/messages';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';

/** Bytes as people read them: 1.5 MiB, 1 GiB. */
function bytesText(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} bytes` : `${Number(value.toFixed(1))} ${units[unit]}`;
}

export function ArtifactRetention({
  workspaceId,
  days,
  storage,
}: {
  workspaceId: string;
  days: number | null;
  storage: { used_bytes: number; limit_bytes: number };
}) {
  const router = useRouter();
  const [value, setValue] = useState(days === null ? '' : String(days));
  const { busy, error, notice, run } = useAction();

  function save(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void run(async () => {
      const chosen = value.trim() === '' ? null : Number(value);
      const saved = await trpc.workspaces.changeSettings.mutate({ workspace_id: workspaceId, artifact_content_days: chosen });
      router.refresh();
      return saved.artifact_content_days === null
        ? 'Saved: stored artifact bytes are kept for ever.'
        : `Saved: stored artifact bytes are removed ${saved.artifact_content_days} days after they were last registered.`;
    });
  }

  return (
    <section className="panel narrow" aria-labelledby="artifact-retention-h">
      <h2 id="artifact-retention-h">Stored artifact bytes</h2>
      <p data-testid="artifact-storage">
        {bytesText(storage.used_bytes)} used of {bytesText(storage.limit_bytes)}
        <meter min={0} max={storage.limit_bytes} value={storage.used_bytes} aria-label="Stored artifact bytes used of the quota" />
      </p>
      <form className="stack" onSubmit={save}>
        <label>
          Keep them for this many days after their last registration (empty: for ever)
          <input type="number" name="artifact_content_days" min={1} max={3650} value={value} onChange={(e) => setValue(e.target.value)} />
        </label>
        <p className="muted">Their digests stay in the ledger for ever: a copy kept elsewhere still checks against them.</p>
        <Messages error={error} notice={notice} />
        <button type="submit" className="primary" disabled={busy}>
          Save
        </button>
      </form>
    </section>
  );
}
