'use client';
/**
 * Which decisions need the approver's passkey, by urgency: an owner's workspace setting. A decision
 * of a chosen urgency is raised with require_passkey, whatever the agent asks.
 */
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { Messages } from '../../_components/messages';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';

const URGENCIES = ['critical', 'urgent', 'standard', 'deferred'] as const;
type Urgency = (typeof URGENCIES)[number];

export function PasskeyPolicy({ workspaceId, urgencies }: { workspaceId: string; urgencies: Urgency[] }) {
  const router = useRouter();
  const [chosen, setChosen] = useState<Urgency[]>(urgencies);
  const { busy, error, notice, run } = useAction();

  function save(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void run(async () => {
      const saved = await trpc.workspaces.changeSettings.mutate({ workspace_id: workspaceId, passkey_urgencies: chosen });
      router.refresh();
      return saved.passkey_urgencies.length > 0
        ? `Saved: ${saved.passkey_urgencies.join(', ')} decisions are approved only with a passkey.`
        : 'Saved: no decision needs a passkey unless its agent asks.';
    });
  }

  return (
    <section className="panel narrow" aria-labelledby="passkey-policy-h">
      <h2 id="passkey-policy-h">Decisions that need a passkey</h2>
      <form className="stack" onSubmit={save}>
        <fieldset>
          <legend>Approving these takes the approver’s passkey</legend>
          {URGENCIES.map((u) => (
            <label key={u}>
              <input
                type="checkbox"
                name="urgency"
                value={u}
                checked={chosen.includes(u)}
                onChange={(e) => setChosen((prev) => (e.target.checked ? [...prev, u] : prev.filter((x) => x !== u)))}
              />
              {u}
            </label>
          ))}
        </fieldset>
        <Messages error={error} notice={notice} />
        <button type="submit" className="primary" disabled={busy}>
          Save
        </button>
      </form>
    </section>
  );
}
