/** The recent calls of upstream tools (GET /tool-calls), newest first: what came of each and the decision an asked one waited on. */
import type { ToolCallView } from '@/server/domain/tool-calls/calls';
import { DataTable } from '../../_components/data-table';
import { when } from '../../_lib/format';
import { statusWords, takenWords } from '../../_lib/tool-call-words';

export function CallsTable({ calls, caption, withServer = false }: { calls: ToolCallView[]; caption: string; withServer?: boolean }) {
  if (calls.length === 0) return <p className="muted">No calls yet.</p>;
  return (
    <DataTable
      caption={caption}
      captionHidden
      className="tool-calls"
      columns={[
        { label: 'When', lead: true },
        { label: 'Tool' },
        { label: 'Its guard' },
        { label: 'Outcome' },
        { label: 'Took' },
        { label: 'Decision' },
      ]}
      rows={calls.map((c) => ({
        key: c.id,
        testId: `tool-call-${c.id}`,
        cells: [
          when(c.called_at),
          withServer ? (
            <>
              <code>{c.tool}</code> on <code>{c.server}</code>
            </>
          ) : (
            <code>{c.tool}</code>
          ),
          takenWords(c.mode),
          // A refused call's outcome says why (its reason); an answered one's result is named by its digest on hover.
          <span key="outcome" title={c.result_digest ?? undefined}>
            {statusWords(c)}
          </span>,
          c.duration_ms === null ? '—' : `${c.duration_ms} ms`,
          c.decision_id ? (
            <a key="decision" href={`/decisions/${c.decision_id}`} aria-label={`Decision on the call of ${c.tool} at ${when(c.called_at)}`}>
              Decision
            </a>
          ) : (
            '—'
          ),
        ],
      }))}
    />
  );
}
