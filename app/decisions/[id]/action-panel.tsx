/**
 * The action under decision, shown readably before the ruling: the tool, each argument, the task
 * it acts on, and its digest; once approved, the action as approved (the approver's arguments
 * when they changed them) and its grant. A call the MCP gateway holds is shown as the tool on its
 * server, with what the service does once it is ruled on and, after, what came of it (GET
 * /tool-calls). Agent-written values are rendered as text.
 */
import { Fragment } from 'react';
import type { ToolCallView } from '@/server/domain/tool-calls/calls';
import { when } from '../../_lib/format';
import { outcomeWords } from '../../_lib/tool-call-words';

interface Action {
  tool: string;
  arguments: Record<string, unknown>;
  target?: { type: string; id: string; version: number };
}

interface Grant {
  id: string;
  expires_at: string;
  consumed_at: string | null;
  voided_at: string | null;
}

/** An argument's value as a person reads it: text as it is, anything else as indented JSON. */
function Value({ value }: { value: unknown }) {
  if (typeof value === 'string') return <span className="prewrap">{value}</span>;
  if (value !== null && typeof value === 'object') return <pre className="break">{JSON.stringify(value, null, 2)}</pre>;
  return <code>{JSON.stringify(value)}</code>;
}

function Arguments({ args, label }: { args: Record<string, unknown>; label: string }) {
  const names = Object.keys(args);
  if (names.length === 0) return <p className="muted">No arguments.</p>;
  return (
    <dl className="facts" aria-label={label}>
      {names.map((name) => (
        <Fragment key={name}>
          <dt>
            <code>{name}</code>
          </dt>
          <dd>
            <Value value={args[name]} />
          </dd>
        </Fragment>
      ))}
    </dl>
  );
}

/** A call of an upstream tool the gateway waits to run on this decision's ruling. */
interface GatewayCall {
  server: string;
  tool: string;
  /** The decision's status: whether it has been ruled on. */
  status: string;
  /** The calls recorded under the decision (GET /tool-calls?decision_id=), newest first. */
  calls: ToolCallView[];
}

/** What came of the call after the ruling: the one sent (at most one: its grant is single use), else why none was. */
function gatewayOutcome({ status, calls }: GatewayCall): string | null {
  const sent = calls.find((c) => c.status !== 'refused') ?? calls[0];
  if (sent) return outcomeWords(sent);
  if (status === 'pending') return null;
  if (status === 'approved') return 'Not run yet: it runs when the agent’s call of it is waiting (a call made again joins this decision).';
  return `Not run: ${status}`;
}

function grantState(grant: Grant): string {
  if (grant.consumed_at) return `used ${when(grant.consumed_at)}`;
  if (grant.voided_at) return `void: its task changed (${when(grant.voided_at)})`;
  return Date.parse(grant.expires_at) <= Date.now() ? `expired ${when(grant.expires_at)}` : `unused, valid until ${when(grant.expires_at)}`;
}

export function ActionPanel(props: {
  action: Action;
  digest: string;
  editable: boolean;
  approved: Action | null;
  approvedDigest: string | null;
  grant: Grant | null;
  gateway?: GatewayCall | null;
}) {
  const { action, approved, grant, gateway } = props;
  const edited = approved !== null && props.approvedDigest !== props.digest;
  const outcome = gateway ? gatewayOutcome(gateway) : null;
  return (
    <section className="panel" aria-labelledby="action-h">
      <h2 id="action-h">The action</h2>
      {gateway && gateway.status === 'pending' && (
        <p data-testid="gateway-call">
          An agent’s call of <code>{gateway.tool}</code> on <code>{gateway.server}</code>, held by the service: approved, the service runs
          it once, with the arguments as approved; declined, it never reaches {gateway.server}.
        </p>
      )}
      <dl className="facts">
        <dt>Tool</dt>
        <dd>
          {gateway ? (
            <span data-testid="action-tool">
              <code>{gateway.tool}</code> on <code>{gateway.server}</code>
            </span>
          ) : (
            <code data-testid="action-tool">{action.tool}</code>
          )}
        </dd>
        {outcome && (
          <>
            <dt>Run</dt>
            <dd data-testid="gateway-run">{outcome}</dd>
          </>
        )}
        {action.target && (
          <>
            <dt>Acts on</dt>
            <dd>
              <a href={`/tasks/${action.target.id}`}>the task</a> as it was at version {action.target.version}
            </dd>
          </>
        )}
        <dt>Digest</dt>
        <dd>
          <code className="break" title="sha256 of the action’s canonical JSON (RFC 8785)">
            {props.digest}
          </code>
        </dd>
      </dl>
      <h3>{edited ? 'Arguments as raised' : 'Arguments'}</h3>
      <Arguments args={action.arguments} label="Arguments" />
      {props.editable && !approved && <p className="muted">You may change the arguments before you approve.</p>}
      {edited && (
        <>
          <h3>Arguments as approved</h3>
          <Arguments args={approved.arguments} label="Arguments as approved" />
          <p>
            Approved digest: <code className="break">{props.approvedDigest}</code>
          </p>
        </>
      )}
      {grant && (
        <p data-testid="grant">
          Grant <code>{grant.id}</code>: single use, {grantState(grant)}.
        </p>
      )}
    </section>
  );
}
