'use client';
/**
 * The owners' side of Settings → Tools: register an upstream MCP server (its headers sent once and
 * never shown again), and for each one its tools with what a call of each does and the guard that
 * says so, a tool's mode changed (an exact-name guard for it placed first), the default mode,
 * listing its tools again, removing it, and its recent calls. Every change is a call of the API
 * (/api/v1/mcp-servers), which refuses anyone but an owner.
 */
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import type { GuardMode, McpGuard } from '@/db/schema';
import type { McpServerView } from '@/server/domain/mcp-servers/servers';
import type { ToolCallView } from '@/server/domain/tool-calls/calls';
import { ConfirmButton } from '../../_components/confirm';
import { DataTable } from '../../_components/data-table';
import { Field } from '../../_components/field';
import { Messages } from '../../_components/messages';
import { when } from '../../_lib/format';
import { modeWords, MODES } from '../../_lib/tool-call-words';
import { trpc } from '../../_lib/trpc-client';
import { useAction } from '../../_lib/use-action';
import { plural } from '@/server/words';
import { CallsTable } from './calls-table';

/** A server as the page shows it: where it is by host only (its URL may hold more than a person needs to see), and its recent calls. */
export type ServerRow = Omit<McpServerView, 'url'> & { host: string; recent: ToolCallView[] };

/**
 * The guards with `tool`'s mode set: an exact-name guard for it first (first match wins), any other
 * guard naming exactly it dropped, the rest kept in order. An ask guard kept as ask keeps what it
 * said of the ruling (urgency, passkey, policy, editable), which only an ask guard may say.
 */
function withToolMode(guards: McpGuard[], tool: string, mode: GuardMode): McpGuard[] {
  const own = guards.find((g) => g.tool === tool);
  const first: McpGuard = mode === 'ask' && own?.mode === 'ask' ? own : { tool, mode };
  return [first, ...guards.filter((g) => g.tool !== tool)];
}

/** The guard that decides a tool, in words. */
function decidedBy(server: ServerRow, tool: string, index: number | null): string {
  if (index === null) return 'the default mode';
  const guard = server.guards[index];
  if (!guard || guard.tool === tool) return `guard ${index + 1}, for this tool`;
  return `guard ${index + 1}, for ${guard.tool}`;
}

function ModeSelect({ name, value, id, ...described }: { name: string; value?: GuardMode; id?: string; 'aria-describedby'?: string }) {
  return (
    <select name={name} defaultValue={value} id={id} {...described}>
      {MODES.map((m) => (
        <option key={m.mode} value={m.mode}>
          {m.words}
        </option>
      ))}
    </select>
  );
}

/** A header's two fields; its value is a credential, typed unseen. */
const HEADER_PARTS = [
  { part: 'name', type: 'text', max: 256 },
  { part: 'value', type: 'password', max: 4096 },
] as const;

interface HeaderRow {
  key: number;
  name: string;
  value: string;
}

export function ToolsManager({ workspaceId, servers }: { workspaceId: string; servers: ServerRow[] }) {
  const router = useRouter();
  const { busy, error, notice, run } = useAction();
  // The new server's headers: one pair to start with (an upstream's bearer token, usually).
  const [headers, setHeaders] = useState<HeaderRow[]>([{ key: 0, name: 'Authorization', value: '' }]);
  const setHeader = (key: number, change: Partial<HeaderRow>) =>
    setHeaders((rows) => rows.map((r) => (r.key === key ? { ...r, ...change } : r)));

  const register = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const name = String(data.get('name') ?? '');
    void run(async () => {
      const sent = headers.filter((h) => h.name.trim() !== '' || h.value !== '');
      const created = await trpc.mcpServers.register.mutate({
        workspace_id: workspaceId,
        name,
        url: String(data.get('url') ?? ''),
        headers: sent.length > 0 ? Object.fromEntries(sent.map((h) => [h.name.trim(), h.value])) : undefined,
        default_mode: String(data.get('default_mode')) as GuardMode,
      });
      form.reset();
      setHeaders([{ key: Date.now(), name: 'Authorization', value: '' }]);
      router.refresh();
      return `Registered ${created.data.name} with ${plural(created.data.tools.length, 'tool')}. Its header values are kept sealed and are not shown again.`;
    });
  };

  const setToolMode = (server: ServerRow, tool: string, event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const mode = String(new FormData(event.currentTarget).get('mode')) as GuardMode;
    void run(async () => {
      // The guards as they are now, not as this page read them: another owner's change is kept.
      const now = (await trpc.mcpServers.get.query({ id: server.id })).data;
      await trpc.mcpServers.update.mutate({ id: server.id, guards: withToolMode(now.guards, tool, mode) });
      router.refresh();
      return `${tool} on ${server.name}: ${modeWords(mode)}.`;
    });
  };

  const setDefault = (server: ServerRow, event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const mode = String(new FormData(event.currentTarget).get('default_mode')) as GuardMode;
    void run(async () => {
      await trpc.mcpServers.update.mutate({ id: server.id, default_mode: mode });
      router.refresh();
      return `${server.name}: a tool no guard names is now “${modeWords(mode)}”.`;
    });
  };

  const refresh = (server: ServerRow) =>
    run(async () => {
      const listed = await trpc.mcpServers.refresh.mutate({ id: server.id });
      router.refresh();
      const count = plural(listed.data.server.tools.length, 'tool');
      return listed.data.changed ? `${server.name} listed ${count}; its tools changed.` : `${server.name} listed ${count}, as before.`;
    });

  const remove = (server: ServerRow) =>
    run(async () => {
      await trpc.mcpServers.remove.mutate({ id: server.id });
      router.refresh();
      return `Removed ${server.name}: agents no longer see its tools. Its calls stay on record.`;
    });

  return (
    <div className="stack">
      <form className="stack panel" onSubmit={register} aria-label="Register an MCP server">
        <h2>Register an MCP server</h2>
        <div className="toolbar">
          <Field label="Name" hint="Lower-case letters, digits and hyphens: agents call its tools as name__tool.">
            <input type="text" name="name" required maxLength={32} pattern="[a-z0-9\-]{1,32}" placeholder="bank" />
          </Field>
          <Field label="URL" hint="Its Streamable HTTP endpoint." className="grow">
            <input type="url" name="url" required maxLength={2000} placeholder="https://tools.example.com/mcp" />
          </Field>
        </div>
        <fieldset className="stack">
          <legend>Headers sent with every call</legend>
          <p className="hint">The credential the server needs, such as Authorization. Kept sealed here; never shown again.</p>
          {headers.map((h, i) => (
            <div className="toolbar" key={h.key}>
              {HEADER_PARTS.map(({ part, type, max }) => (
                <Field key={part} label={`Header ${i + 1} ${part}`} className={part === 'value' ? 'grow' : undefined}>
                  <input
                    type={type}
                    value={h[part]}
                    maxLength={max}
                    autoComplete="off"
                    onChange={(e) => setHeader(h.key, { [part]: e.target.value })}
                  />
                </Field>
              ))}
            </div>
          ))}
          <div>
            <button type="button" onClick={() => setHeaders((rows) => [...rows, { key: Date.now(), name: '', value: '' }])}>
              Add a header
            </button>
          </div>
        </fieldset>
        <Field label="Default mode" hint="What a call of a tool no guard names does.">
          <ModeSelect name="default_mode" value="ask" />
        </Field>
        <div>
          <button type="submit" className="primary" disabled={busy}>
            Register
          </button>
        </div>
      </form>
      <Messages error={error} notice={notice} />
      {servers.length === 0 && <p className="muted">No MCP servers yet.</p>}
      {servers.map((s) => (
        <section key={s.id} className="panel" aria-labelledby={`server-${s.id}`}>
          <h2 id={`server-${s.id}`}>{s.name}</h2>
          <dl className="facts">
            <dt>Where</dt>
            <dd>
              <code>{s.host}</code>
            </dd>
            <dt>Headers</dt>
            <dd>
              {s.header_names.length === 0 ? (
                'none'
              ) : (
                <>
                  {s.header_names.map((n, i) => (
                    <span key={n}>
                      {i > 0 && ', '}
                      <code>{n}</code>
                    </span>
                  ))}{' '}
                  <span className="muted">(values sealed, never shown)</span>
                </>
              )}
            </dd>
            <dt>Default mode</dt>
            <dd>{modeWords(s.default_mode)}</dd>
            <dt>Time allowed</dt>
            <dd>{s.timeout_ms / 1000} s a call</dd>
            <dt>Tools listed</dt>
            <dd>{s.tools_listed_at ? when(s.tools_listed_at) : 'never'}</dd>
            <dt>Last listing</dt>
            <dd className={s.last_error ? 'error' : undefined}>{s.last_error ? `failed: ${s.last_error}` : 'worked'}</dd>
          </dl>
          <h3>Tools</h3>
          {s.tools.length === 0 ? (
            <p className="muted">It lists no tools.</p>
          ) : (
            <DataTable
              caption={`Tools of ${s.name}`}
              captionHidden
              columns={[{ label: 'Tool', lead: true }, { label: 'A call' }, { label: 'Decided by' }, { label: 'Change' }]}
              rows={s.tools.map((t, i) => ({
                key: t.name,
                testId: `tool-${s.name}-${t.name}`,
                cells: [
                  <span key="tool">
                    <code>{t.name}</code>
                    {t.description && <span className="muted prewrap"> {t.description}</span>}
                  </span>,
                  modeWords(t.mode),
                  decidedBy(s, t.name, t.guard_index),
                  <form key="change" className="actions" onSubmit={(event) => setToolMode(s, t.name, event)}>
                    <label htmlFor={`mode-${s.id}-${i}`} className="visually-hidden">
                      Mode of {t.name}
                    </label>
                    <ModeSelect name="mode" value={t.mode} id={`mode-${s.id}-${i}`} />
                    <button type="submit" disabled={busy} aria-label={`Set mode of ${t.name}`}>
                      Set
                    </button>
                  </form>,
                ],
              }))}
            />
          )}
          <form className="toolbar" onSubmit={(event) => setDefault(s, event)}>
            <Field label={`Default mode of ${s.name}`} hint="For the tools no guard names, new ones included." className="fit">
              <ModeSelect name="default_mode" value={s.default_mode} />
            </Field>
            <div className="field fit">
              <button type="submit" disabled={busy} aria-label={`Set default mode of ${s.name}`}>
                Set default
              </button>
            </div>
          </form>
          <div className="actions">
            <button type="button" onClick={() => void refresh(s)} disabled={busy} aria-label={`List tools again: ${s.name}`}>
              List tools again
            </button>
            <ConfirmButton
              name={`Remove ${s.name}`}
              busy={busy}
              question={
                <>
                  Remove <strong>{s.name}</strong>? Agents lose its tools at once and its sealed headers are deleted. The calls made to it
                  stay on record.
                </>
              }
              confirmLabel="Confirm remove"
              onConfirm={() => remove(s)}
            >
              Remove
            </ConfirmButton>
          </div>
          <h3>Recent calls</h3>
          <CallsTable calls={s.recent} caption={`Recent calls of the tools of ${s.name}`} />
        </section>
      ))}
    </div>
  );
}
