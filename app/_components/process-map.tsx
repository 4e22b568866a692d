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

type Point = { x: number; y: number };

interface Layout {
  /** `wide`: a column per dependency depth, handoffs left to right. `tall`: one column, top to bottom. */
  kind: 'wide' | 'tall';
  position: Map<string, Point>;
  /** The row of each stage in the tall layout (arrows between neighbours go straight down). */
  row: Map<string, number>;
  width: number;
  height: number;
}

/** Room on the right of the tall layout for the arcs of handoffs that skip a stage. */
const ARC = 48;
const GAP_Y_TALL = 34;

function wideLayout(process: Process): Layout {
  const depth = columns(process);
  const rowsInColumn = new Map<number, number>();
  const position = new Map<string, Point>();
  for (const s of process.stages) {
    const col = depth.get(s.workstream_id) ?? 0;
    const row = rowsInColumn.get(col) ?? 0;
    rowsInColumn.set(col, row + 1);
    position.set(s.workstream_id, { x: PAD + col * (BOX_W + GAP_X), y: PAD + row * (BOX_H + GAP_Y) });
  }
  const cols = Math.max(1, ...[...rowsInColumn.keys()].map((c) => c + 1));
  const rows = Math.max(1, ...rowsInColumn.values());
  return {
    kind: 'wide',
    position,
    row: new Map(),
    width: PAD * 2 + cols * BOX_W + (cols - 1) * GAP_X,
    height: PAD * 2 + rows * BOX_H + (rows - 1) * GAP_Y,
  };
}

/** For a narrow screen: the stages one under another, by depth, so the boxes keep their size and their text stays readable. */
function tallLayout(process: Process): Layout {
  const depth = columns(process);
  const order = process.stages
    .map((s, i) => ({ id: s.workstream_id, depth: depth.get(s.workstream_id) ?? 0, i }))
    .sort((a, b) => a.depth - b.depth || a.i - b.i);
  const position = new Map<string, Point>();
  const row = new Map<string, number>();
  order.forEach((s, i) => {
    position.set(s.id, { x: PAD, y: PAD + i * (BOX_H + GAP_Y_TALL) });
    row.set(s.id, i);
  });
  return {
    kind: 'tall',
    position,
    row,
    width: PAD * 2 + BOX_W + ARC,
    height: PAD * 2 + order.length * BOX_H + Math.max(0, order.length - 1) * GAP_Y_TALL,
  };
}

/** A handoff's arrow: left to right in the wide layout; down, or an arc on the right, in the tall one. */
function arrowPath(layout: Layout, fromId: string, toId: string, from: Point, to: Point): string {
  if (layout.kind === 'wide') {
    return `M ${from.x + BOX_W} ${from.y + BOX_H / 2} C ${from.x + BOX_W + GAP_X / 2} ${from.y + BOX_H / 2}, ${to.x - GAP_X / 2} ${to.y + BOX_H / 2}, ${to.x} ${to.y + BOX_H / 2}`;
  }
  const skipped = Math.abs((layout.row.get(toId) ?? 0) - (layout.row.get(fromId) ?? 0));
  if (skipped === 1) return `M ${from.x + BOX_W / 2} ${from.y + BOX_H} L ${to.x + BOX_W / 2} ${to.y}`;
  const reach = Math.min(ARC - 6, 14 + 8 * skipped);
  return `M ${from.x + BOX_W} ${from.y + BOX_H / 2} C ${from.x + BOX_W + reach} ${from.y + BOX_H / 2}, ${to.x + BOX_W + reach} ${to.y + BOX_H / 2}, ${to.x + BOX_W} ${to.y + BOX_H / 2}`;
}

/**
 * The map twice when it has more than one column: wide for a wide screen, tall for a narrow one
 * (globals.css shows one of them), since the wide one shrunk to a phone's width has unreadable text.
 */
export function ProcessMap({ process, titleId }: { process: Process; titleId: string }) {
  if (process.stages.length === 0) return <p className="muted">No stages yet: this initiative has no workstreams.</p>;
  const wide = wideLayout(process);
  if (wide.width <= PAD * 2 + BOX_W) return <Drawing process={process} layout={wide} titleId={titleId} className="process-map" />;
  return (
    <>
      <Drawing process={process} layout={wide} titleId={titleId} className="process-map wide" />
      <Drawing process={process} layout={tallLayout(process)} titleId={`${titleId}-tall`} className="process-map tall" />
    </>
  );
}

function Drawing({ process, layout, titleId, className }: { process: Process; layout: Layout; titleId: string; className: string }) {
  const { position, width, height } = layout;
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
    return from && to ? [{ key: `${h.from_id}-${h.to_id}`, d: arrowPath(layout, h.from_id, h.to_id, from, to) }] : [];
  });

  return (
    <svg className={className} role="img" aria-labelledby={titleId} viewBox={`0 0 ${width} ${height}`} width={width} height={height}>
      <title id={titleId}>
        {`Operating map of ${process.title}: ${plural(process.stages.length, 'stage')}, ${plural(arrows.length, 'handoff')} between them, ${plural(process.evidence.length, 'receipt')} as evidence.`}
      </title>
      <defs>
        <marker id={`${titleId}-arrow`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#5b6672" />
        </marker>
      </defs>
      {arrows.map((a) => (
        <path key={a.key} d={a.d} fill="none" stroke="#5b6672" strokeWidth="1.5" markerEnd={`url(#${titleId}-arrow)`} />
      ))}
      {process.stages.map((s) => {
        const p = position.get(s.workstream_id)!;
        const done = s.task_counts.done;
        const progress = s.tasks_total === 0 ? 0 : done / s.tasks_total;
        const decisions = decisionsByStage.get(s.workstream_id) ?? [];
        const live = (s.run_counts.running ?? 0) + (s.run_counts.queued ?? 0);
        const held = s.run_counts.paused ?? 0;
        const runs = live + held > 0 ? ` · ${plural(live, 'run')} active${held ? `, ${held} paused` : ''}` : '';
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
