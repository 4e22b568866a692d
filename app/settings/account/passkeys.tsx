'use client';
/**
 * The person's passkeys: the list, and "Add a passkey" (WebAuthn through @simplewebauthn/browser).
 * A passkey signs the rulings that need one (decisions raised with require_passkey), and each is
 * announced in the ledger of the person's workspaces with its public key.
 */
import { startRegistration } from '@simplewebauthn/browser';
import { useRouter } from 'next/navigation';
import type { FormEvent } from 'react';
import { ConfirmButton } from '../../_components/confirm';
import { DataTable } from '../../_components/data-table';
import { Field } from '../../_components/field';
import { Messages } from '../../_components/messages';
import { when } from '../../_lib/format';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';

type RegistrationOptions = Parameters<typeof startRegistration>[0]['optionsJSON'];

export interface PasskeyItem {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export function Passkeys({ passkeys, available }: { passkeys: PasskeyItem[]; available: boolean }) {
  const router = useRouter();
  const { busy, error, notice, run } = useAction();

  const add = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const currentPassword = String(new FormData(form).get('current_password') ?? '');
    void run(async () => {
      const { challenge_id, options } = await trpc.account.passkeyOptions.mutate();
      // tRPC's inferred JSON type of the options loses their exact shape; they are what the server library made.
      const response = await startRegistration({ optionsJSON: options as unknown as RegistrationOptions });
      await trpc.account.addPasskey.mutate({
        challenge_id,
        response,
        name: `Passkey ${passkeys.length + 1}`,
        current_password: currentPassword,
      });
      form.reset();
      router.refresh();
      return 'Passkey added. Decisions that need a passkey can now be approved with it.';
    });
  };

  const remove = (p: PasskeyItem) =>
    run(async () => {
      await trpc.account.removePasskey.mutate({ id: p.id });
      router.refresh();
      return `${p.name} removed: it signs nothing from now on.`;
    });

  return (
    <section className="panel" aria-labelledby="passkeys-h">
      <h2 id="passkeys-h">Passkeys</h2>
      <p className="muted">
        A passkey signs your approvals of decisions that need one: the ledger then holds your device’s signature over exactly what you
        approved.
      </p>
      <Messages error={error} notice={notice} />
      {passkeys.length > 0 && (
        <DataTable
          caption="Your passkeys"
          captionHidden
          columns={[{ label: 'Name', lead: true }, { label: 'Added' }, { label: 'Last used' }, { label: 'Actions', hidden: true }]}
          rows={passkeys.map((p) => ({
            key: p.id,
            cells: [
              p.name,
              when(p.created_at),
              p.last_used_at ? when(p.last_used_at) : 'never',
              <ConfirmButton
                key="remove"
                name={`Remove ${p.name}`}
                busy={busy}
                question={
                  <>
                    Remove <strong>{p.name}</strong>? It will sign nothing from now on.
                  </>
                }
                confirmLabel="Confirm remove"
                onConfirm={() => remove(p)}
              >
                Remove
              </ConfirmButton>,
            ],
          }))}
        />
      )}
      {available ? (
        <form className="stack" onSubmit={add}>
          <Field label="Your password, to add a passkey">
            <input name="current_password" type="password" autoComplete="current-password" required />
          </Field>
          <button type="submit" className="primary" disabled={busy}>
            Add a passkey
          </button>
        </form>
      ) : (
        <p className="muted">Passkeys need this service reached by a name (APP_URL), not an IP address.</p>
      )}
    </section>
  );
}
