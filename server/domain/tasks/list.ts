/**
 * GET /tasks: the workspace's tasks, filtered, in one of two orders, paged by keyset cursor.
 *
 * Orders: `priority` (urgent first, then oldest first) and `updated` (newest change first). Both
 * are read off an index (tasks_queue_idx / tasks_priority_idx / tasks_updated_idx).
 *
 * Paging is pinned to the ledger head of the first page (S0, carried in the cursor). A task keeps,
 * for the whole listing, the place its sort key gave it at S0: a task changed after S0 (PATCHed to
 * another priority, moved by a run to the top of `updated`) is served where it stood then, found
 * from the ledger (its last event at or before S0, and the `before` of a later priority change).
 * So every task that existed at the first page is served exactly once, whatever is changed while a
 * reader pages; tasks created after the first page are left out (read them with
 * `updated_after` = the time the first page was read). Filters are applied to tasks as they are now:
 * a task that no longer matches is not served, and what is served is each task's current content.
 */
import { sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { query, type Executor } from '@/db';
import { tasks, type TaskPriority, type taskStatuses, type taskTypes } from '@/db/schema';
import type { TaskRow } from '../hierarchy/records';

export type TaskSort = 'priority' | 'updated';

export interface TaskFilters {
  status?: (typeof taskStatuses)[number][];
  type?: (typeof taskTypes)[number][];
  priority?: TaskPriority[];
  initiativeId?: string;
  workstreamId?: string;
  milestoneId?: string;
  agentId?: string;
  updatedAfter?: Date;
  /** In `todo`, every dependency `done`, initiative, workstream and milestone `active`, no open run. */
  ready?: boolean;
}

/** Where a task stands in an order: the values compared, last the id. */
export type SortKey =
  { sort: 'priority'; rank: number; createdAt: string; id: string } | { sort: 'updated'; updatedAt: string; id: string };

export interface TaskPageRequest {
  sort: TaskSort;
  filters: TaskFilters;
  limit: number;
  /** From the cursor: the first page's ledger head, and the last task served. */
  after?: { asOf: number; key: SortKey };
}

export interface TaskPage {
  /** The tasks in order. */
  tasks: TaskRow[];
  /** The key of each id served (for the next cursor). */
  keys: SortKey[];
  hasMore: boolean;
  /** The ledger head the listing is pinned to. */
  asOf: number;
}

const RANK_CASE = (column: SQL) => sql`(case ${column} when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 else 3 end)`;
const priorityRank = (p: TaskPriority) => ({ urgent: 0, high: 1, medium: 2, low: 3 })[p];

/** The filters as SQL over `t` (tasks), `i`, `w`, `m` (its initiative, workstream, milestone). */
function filterSql(f: TaskFilters): SQL[] {
  const where: SQL[] = [];
  const list = (values: readonly string[]) =>
    sql.join(
      values.map((v) => sql`${v}`),
      sql`, `,
    );
  if (f.status?.length) where.push(sql`t.status in (${list(f.status)})`);
  if (f.type?.length) where.push(sql`t.type in (${list(f.type)})`);
  if (f.priority?.length) where.push(sql`t.priority in (${list(f.priority)})`);
  if (f.initiativeId) where.push(sql`t.initiative_id = ${f.initiativeId}::uuid`);
  if (f.workstreamId) where.push(sql`t.workstream_id = ${f.workstreamId}::uuid`);
  if (f.milestoneId) where.push(sql`t.milestone_id = ${f.milestoneId}::uuid`);
  if (f.agentId !== undefined) where.push(sql`t.agent_id = ${f.agentId}`);
  if (f.updatedAfter) where.push(sql`t.updated_at > ${f.updatedAfter.toISOString()}::timestamptz`);
  if (f.ready) {
    where.push(sql`t.status = 'todo' and t.pause_id is null`);
    // Scalar subqueries, not EXISTS: the planner cannot turn them into joins that start from the
    // (few) active initiatives and sort the workspace afterwards; it walks the tasks in index
    // order and stops after `limit` matches.
    where.push(sql`(select i.status from initiatives i where i.id = t.initiative_id) = 'active'`);
    where.push(sql`(select w.status from workstreams w where w.id = t.workstream_id) = 'active'`);
    where.push(sql`(select m.status from milestones m where m.id = t.milestone_id) = 'active'`);
    // Likewise "no such row" as a scalar subquery (LIMIT 1 keeps it one): never an anti-join that
    // scans every task or run of the workspace for the first page of fifty.
    where.push(
      sql`(cardinality(t.depends_on) = 0 or (select 1 from tasks d where d.id = any(t.depends_on) and d.status <> 'done' limit 1) is null)`,
    );
    where.push(sql`(select 1 from runs r where r.task_id = t.id and r.status in ('queued', 'running', 'paused') limit 1) is null`);
  }
  return where;
}

const and = (parts: SQL[]) =>
  parts.length === 0
    ? sql`true`
    : sql.join(
        parts.map((p) => sql`(${p})`),
        sql` and `,
      );

/** A task served, with its place in the orders. */
interface Row {
  task: TaskRow;
  id: string;
  rank: number;
  created_at: string;
  updated_at: string;
}

/** The pieces every page's statement shares. */
function parts(workspaceId: string, req: Pick<TaskPageRequest, 'sort' | 'filters'>) {
  return {
    filters: filterSql(req.filters),
    ws: sql`t.workspace_id = ${workspaceId}::uuid`,
    // Ordered by the indexed expressions themselves (not the text columns below), so an index serves it.
    order: req.sort === 'priority' ? sql`${RANK_CASE(sql`t.priority`)} asc, t.created_at asc, t.id asc` : sql`t.updated_at desc, t.id desc`,
  };
}

const t = alias(tasks, 't');

/**
 * The tasks `where` selects (over `t`), whole, with their places in the orders: a page's statement
 * reads the rows it serves. (A second statement fetching them by id was planned once, while the
 * table was small, as a sequential scan, and kept that prepared plan as the table grew.)
 */
function rowsWhere(db: Executor, where: SQL, order?: SQL, limit?: number, headOfWorkspace?: string) {
  const q = db
    .select({
      task: t,
      // The ledger head, read once (an InitPlan) in the page's snapshot.
      head: sql<
        number | null
      >`${headOfWorkspace ? sql`(select sequence from ledger_heads where workspace_id = ${headOfWorkspace}::uuid)` : sql`null`}`.mapWith(
        Number,
      ),
      id: t.id,
      rank: sql<number>`${RANK_CASE(sql`t.priority`)}`.mapWith(Number),
      created_at: sql<string>`to_char(t.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
      updated_at: sql<string>`to_char(t.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    })
    .from(t)
    .where(where);
  return order ? q.orderBy(order).limit(limit!) : q;
}

/**
 * The queue's condition and its priority order over `t` (tasks): what GET /tasks?ready=true reads
 * pages of, and what POST /tasks/claim takes the first unlocked task of (server/domain/runs/claim.ts).
 */
export function queueSql(workspaceId: string, filters: TaskFilters): { where: SQL; order: SQL } {
  const { filters: conditions, ws, order } = parts(workspaceId, { sort: 'priority', filters });
  return { where: and([ws, ...conditions]), order };
}

/** A first page and the ledger head it is pinned to, in one statement (one snapshot). */
export function firstPageQuery(db: Executor, workspaceId: string, req: Omit<TaskPageRequest, 'after'>) {
  const { filters, ws, order } = parts(workspaceId, req);
  return rowsWhere(db, sql`${ws} and ${and(filters)}`, order, req.limit + 1, workspaceId);
}

/** The next page of tasks. One statement for a first page; three for a later one (what moved, what stayed, the moved that match). */
export async function pageTasks(db: Executor, workspaceId: string, req: TaskPageRequest): Promise<TaskPage> {
  const { filters, ws, order } = parts(workspaceId, req);

  if (!req.after) {
    const rows = await firstPageQuery(db, workspaceId, req);
    const head = rows.length > 0 ? rows[0]!.head! : await headOf(db, workspaceId);
    return finish(rows, req, head);
  }

  const { asOf, key } = req.after;
  // Tasks changed since the first page, with their place then: updated_at at S0 is the time of
  // their last event at or before S0 (services write the row's updated_at from the event's
  // time); their priority then is the `before` of their first priority change after S0.
  const moved = await query<{ id: string; updated_at_then: string | null; priority_then: TaskPriority | null }>(
    db,
    sql`with changed as (
          select distinct aggregate_id as id from ledger_events
          where workspace_id = ${workspaceId}::uuid and sequence > ${asOf} and aggregate_type = 'task')
        select c.id,
          (select e.occurred_at from ledger_events e
             where e.workspace_id = ${workspaceId}::uuid and e.aggregate_id = c.id and e.sequence <= ${asOf}
             order by e.aggregate_version desc limit 1) as updated_at_then,
          (select p.payload #>> '{changes,priority,before}' from ledger_events e
             -- Older events keep the payload as jsonb, newer ones as its canonical text.
             cross join lateral (select coalesce(e.payload, e.payload_text::jsonb) as payload) p
             where e.workspace_id = ${workspaceId}::uuid and e.aggregate_id = c.id and e.sequence > ${asOf}
               and e.event_type = 'task.updated' and p.payload -> 'changes' ? 'priority'
             order by e.aggregate_version asc limit 1) as priority_then
        from changed c`,
  );
  const movedIds = moved.map((m) => m.id);
  const notMoved = movedIds.length
    ? sql`t.id not in (${sql.join(
        movedIds.map((id) => sql`${id}::uuid`),
        sql`, `,
      )})`
    : sql`true`;
  const beyond =
    key.sort === 'priority'
      ? sql`(${RANK_CASE(sql`t.priority`)}, t.created_at, t.id) > (${key.rank}, ${key.createdAt}::timestamptz, ${key.id}::uuid)`
      : sql`(t.updated_at, t.id) < (${key.updatedAt}::timestamptz, ${key.id}::uuid)`;
  const stayed = await rowsWhere(db, sql`${ws} and ${notMoved} and ${beyond} and ${and(filters)}`, order, req.limit + 1);

  // The moved tasks that existed at S0 and still match, placed by their key at S0.
  const existed = moved.filter((m) => m.updated_at_then !== null);
  let placed: Row[] = [];
  if (existed.length) {
    const matching = await rowsWhere(
      db,
      sql`${ws} and t.id in (${sql.join(
        existed.map((m) => sql`${m.id}::uuid`),
        sql`, `,
      )}) and ${and(filters)}`,
    );
    const then = new Map(existed.map((m) => [m.id, m]));
    placed = matching
      .map((r) => {
        const m = then.get(r.id)!;
        return { ...r, rank: m.priority_then ? priorityRank(m.priority_then) : Number(r.rank), updated_at: m.updated_at_then! };
      })
      .filter((r) => compare(keyOf(r, req.sort), key) > 0);
  }
  const merged = [...stayed, ...placed].sort((a, b) => compare(keyOf(a, req.sort), keyOf(b, req.sort)));
  return finish(merged, req, asOf);
}

async function headOf(db: Executor, workspaceId: string): Promise<number> {
  const [row] = await query<{ sequence: number | string }>(
    db,
    sql`select sequence from ledger_heads where workspace_id = ${workspaceId}::uuid`,
  );
  return Number(row?.sequence ?? 0);
}

function finish(rows: Row[], req: TaskPageRequest, asOf: number): TaskPage {
  const page = rows.slice(0, req.limit);
  return {
    tasks: page.map((r) => r.task),
    keys: page.map((r) => keyOf(r, req.sort)),
    hasMore: rows.length > req.limit,
    asOf,
  };
}

function keyOf(r: Row, sort: TaskSort): SortKey {
  return sort === 'priority'
    ? { sort, rank: Number(r.rank), createdAt: r.created_at, id: r.id }
    : { sort, updatedAt: r.updated_at, id: r.id };
}

/** Negative when `a` comes before `b` in the order (ISO times compare as text; uuids as PostgreSQL orders them). */
function compare(a: SortKey, b: SortKey): number {
  if (a.sort === 'priority' && b.sort === 'priority') {
    return a.rank - b.rank || cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id);
  }
  if (a.sort === 'updated' && b.sort === 'updated') return cmp(b.updatedAt, a.updatedAt) || cmp(b.id, a.id);
  throw new Error('keys of different orders');
}

const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

export const TASK_SORTS = ['priority', 'updated'] as const;
