/**
 * A process of the operating map drawn as a picture: its stages (workstreams) as boxes in columns
 * by dependency depth, arrows for the handoffs between them, task progress as a bar, and the
 * handoff decisions on each stage. Pure SVG, rendered on the server.
 */
import type { Process } from '@/server/domain/operating-map/map';
import { plural } from '@/server/words';

const BOX_W = 210;
const BOX_H = 96;
const GAP_X = 70;
const GAP_Y = 28;
const PAD = 16;

const STATUS_COLOR: Record<string, string> = {
  active: '#1f5fbf',
  paused: '#b7791f',
  completed: '#1e7b45',
  cancelled: '#6b7280',
};

function columns(process: Process): Map<string, number> {
  const byId = new Map(process.stages.map((s) => [s.workstream_id, s]));
  const depth = new Map<string, number>();
  const visit = (id: string, seen: Set<string>): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    if (seen.has(id)) return 0;
    seen.add(id);
    const deps = byId.get(id)?.depends_on.filter((d) => byId.has(d)) ?? [];
    const d = deps.length === 0 ? 0 : 1 + Math.max(...deps.map((x) => visit(x, seen)));
    depth.set(id, d);
    return d;
  };
  for (const s of process.stages) visit(s.workstream_id, new Set());
  return depth;
}

export function ProcessMap({ process, titleId }: { process: Process; titleId: string }) {
  const depth = columns(process);
  const rowsInColumn = new Map<number, number>();
  const position = new Map<string, { x: number; y: number }>();
  for (const s of process.stages) {
    const col = depth.get(s.workstream_id) ?? 0;
    const row = rowsInColumn.get(col) ?? 0;
    rowsInColumn.set(col, row + 1);
    position.set(s.workstream_id, { x: PAD + col * (BOX_W + GAP_X), y: PAD + row * (BOX_H + GAP_Y) });
  }
  const cols = Math.max(1, ...[...rowsInColumn.keys()].map((c) => c + 1));
  const rows = Math.max(1, ...rowsInColumn.values());
  const width = PAD * 2 + cols * BOX_W + (cols - 1) * GAP_X;
  const height = PAD * 2 + rows * BOX_H + (rows - 1) * GAP_Y;
  const decisionsByStage = new Map<string, { title: string; status: string }[]>();
  for (const h of process.handoffs) {
    if (h.kind === 'decision' && h.workstream_id) {
      decisionsByStage.set(h.workstream_id, [...(decisionsByStage.get(h.workstream_id) ?? []), { title: h.title, status: h.status }]);
    }
  }
  const arrows = process.handoffs.flatMap((h) => {
    if (h.kind !== 'dependency' || h.level !== 'workstream') return [];
    const from = position.get(h.from_id);
    const to = position.get(h.to_id);
    return from && to ? [{ key: `${h.from_id}-${h.to_id}`, from, to }] : [];
  });

  if (process.stages.length === 0) return <p className="muted">No stages yet: this initiative has no workstreams.</p>;

  return (
    <svg
      className="process-map"
      role="img"
      aria-labelledby={titleId}
      viewBox={`0 0 ${width} ${height}`}
      width={width}
      height={height}
      style={{ maxWidth: '100%', height: 'auto' }}
    >
      <title id={titleId}>
        {`Operating map of ${process.title}: ${plural(process.stages.length, 'stage')}, ${plural(arrows.length, 'handoff')} between them, ${plural(process.evidence.length, 'receipt')} as evidence.`}
      </title>
      <defs>
        <marker id={`${titleId}-arrow`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#5b6672" />
        </marker>
      </defs>
      {arrows.map((a) => (
        <path
          key={a.key}
          d={`M ${a.from.x + BOX_W} ${a.from.y + BOX_H / 2} C ${a.from.x + BOX_W + GAP_X / 2} ${a.from.y + BOX_H / 2}, ${a.to.x - GAP_X / 2} ${a.to.y + BOX_H / 2}, ${a.to.x} ${a.to.y + BOX_H / 2}`}
          fill="none"
          stroke="#5b6672"
          strokeWidth="1.5"
          markerEnd={`url(#${titleId}-arrow)`}
        />
      ))}
      {process.stages.map((s) => {
        const p = position.get(s.workstream_id)!;
        const done = s.task_counts.done;
        const progress = s.tasks_total === 0 ? 0 : done / s.tasks_total;
        const decisions = decisionsByStage.get(s.workstream_id) ?? [];
        const live = (s.run_counts.running ?? 0) + (s.run_counts.queued ?? 0);
        const held = s.run_counts.paused ?? 0;
        const runs = live + held > 0 ? ` · ${live} run${live === 1 ? '' : 's'} active${held ? `, ${held} paused` : ''}` : '';
        return (
          <g key={s.workstream_id} transform={`translate(${p.x} ${p.y})`}>
            <rect width={BOX_W} height={BOX_H} rx="8" fill="#fff" stroke={STATUS_COLOR[s.status] ?? '#5b6672'} strokeWidth="2" />
            <text x="12" y="24" fontSize="14" fontWeight="600" fill="#1d232a">
              {s.name.length > 24 ? `${s.name.slice(0, 23)}…` : s.name}
            </text>
            <text x="12" y="44" fontSize="12" fill="#5b6672">
              {`${s.status} · ${plural(s.tasks_total, 'task')} · ${s.estimate_hours} h`}
            </text>
            <rect x="12" y="56" width={BOX_W - 24} height="8" rx="4" fill="#eef1f4" />
            <rect x="12" y="56" width={(BOX_W - 24) * progress} height="8" rx="4" fill="#1e7b45" />
            <text x="12" y="84" fontSize="11" fill="#5b6672">
              {decisions.length > 0
                ? `◆ ${plural(decisions.length, 'handoff decision')} (${decisions.map((d) => d.status).join(', ')})`
                : `${done}/${s.tasks_total} done${runs}`}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
