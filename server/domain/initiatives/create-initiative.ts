/**
 * POST /initiatives: an initiative and, optionally, its whole tree (workstreams → milestones →
 * tasks) in one transaction: four inserts and one append carrying an event per created node, in
 * tree order, so replaying the ledger recreates parents before children.
 */
import type { Tx } from '@/db';
import { initiatives, milestones, tasks, workstreams } from '@/db/schema';
import { appendEvents, type NewEvent } from '@/server/ledger/append';
import type { Actor } from '../actor';
import { initiativeRow, milestoneRow, taskRow, workstreamRow } from '../hierarchy/records';
import { planTree, type InitiativeInput, type TreePlan } from './plan-tree';

export async function createInitiativeTree(
  tx: Tx,
  actor: Actor,
  input: InitiativeInput,
  opts: { isInbox?: boolean; newId?: () => string; at?: Date } = {},
): Promise<TreePlan> {
  const at = opts.at ?? new Date();
  const plan = planTree(input, { at, isInbox: opts.isInbox, newId: opts.newId });
  const meta = { workspaceId: actor.workspaceId, version: 1, at };

  await tx.insert(initiatives).values(initiativeRow(plan.initiative, meta));
  if (plan.workstreams.length > 0) await tx.insert(workstreams).values(plan.workstreams.map((w) => workstreamRow(w, meta)));
  if (plan.milestones.length > 0) await tx.insert(milestones).values(plan.milestones.map((m) => milestoneRow(m, meta)));
  if (plan.tasks.length > 0) await tx.insert(tasks).values(plan.tasks.map((t) => taskRow(t, meta)));

  const events: NewEvent[] = [
    { aggregateType: 'initiative', aggregateId: plan.initiative.id, eventType: 'initiative.created', payload: { ...plan.initiative } },
  ];
  const milestonesOf = groupBy(plan.milestones, (m) => m.workstream_id);
  const tasksOf = groupBy(plan.tasks, (t) => t.milestone_id);
  for (const w of plan.workstreams) {
    events.push({ aggregateType: 'workstream', aggregateId: w.id, eventType: 'workstream.created', payload: { ...w } });
    for (const m of milestonesOf.get(w.id) ?? []) {
      events.push({ aggregateType: 'milestone', aggregateId: m.id, eventType: 'milestone.created', payload: { ...m } });
      for (const t of tasksOf.get(m.id) ?? []) {
        events.push({ aggregateType: 'task', aggregateId: t.id, eventType: 'task.created', payload: { ...t } });
      }
    }
  }
  await appendEvents(tx, actor, events, at);
  return plan;
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
