'use client';
/**
 * The person's passkeys: the list, and "Add a passkey" (WebAuthn through @simplewebauthn/browser).
 * A passkey signs the rulings that need one (decisions raised with require_passkey), and each is
 * announced in the ledger of the person's workspaces with its public key.
 */
import { startRegistration } from '@simplewebauthn/browser';
import { useRouter } from 'next/navigation';
import { DataTable } from '../../_components/data-table';
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

  const add = () =>
    void run(async () => {
      const { challenge_id, options } = await trpc.account.passkeyOptions.mutate();
      // tRPC's inferred JSON type of the options loses their exact shape; they are what the server library made.
      const response = await startRegistration({ optionsJSON: options as unknown as RegistrationOptions });
      await trpc.account.addPasskey.mutate({ challenge_id, response, name: `Passkey ${passkeys.length + 1}` });
      router.refresh();
      return 'Passkey added. Decisions that need a passkey can now be approved with it.';
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
          columns={[{ label: 'Name', lead: true }, { label: 'Added' }, { label: 'Last used' }]}
          rows={passkeys.map((p) => ({
            key: p.id,
            cells: [p.name, when(p.created_at), p.last_used_at ? when(p.last_used_at) : 'never'],
          }))}
        />
      )}
      {available ? (
        <button type="button" className="primary" disabled={busy} onClick={add}>
          Add a passkey
        </button>
      ) : (
        <p className="muted">Passkeys need this service reached by a name (APP_URL), not an IP address.</p>
      )}
    </section>
  );
}
