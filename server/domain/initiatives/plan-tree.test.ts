import { describe, expect, it } from 'vitest';
import { AppError } from '@/server/errors';
import { findCycle, MAX_TREE_NODES, planTree, type InitiativeInput, type TaskInput, type WorkstreamInput } from './plan-tree';

const base: InitiativeInput = {
  title: 'Launch',
  visibility: 'workspace',
  model_tier: 'standard',
  execution_policy: { mode: 'parallel', max_concurrent_agents: 2 },
};
const task = (ref: string, depends_on?: string[]): TaskInput => ({ ref, title: ref, type: 'build', priority: 'medium', depends_on });
const ws = (ref: string, depends_on?: string[], extra: Partial<WorkstreamInput> = {}): WorkstreamInput => ({
  ref,
  name: ref,
  depends_on,
  ...extra,
});

function issuesOf(input: InitiativeInput): { path: string; message: string }[] {
  try {
    planTree(input, { at: new Date() });
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).details.issues as { path: string; message: string }[];
  }
  throw new Error('expected the plan to be refused');
}

describe('planTree', () => {
  it('gives every node an id, resolves refs among siblings and keeps their order', () => {
    const plan = planTree(
      {
        ...base,
        workstreams: [
          ws('research'),
          ws('build', ['research'], {
            milestones: [{ ref: 'm1', title: 'Beta', tasks: [task('a'), task('b', ['a']), task('c', ['b', 'a'])] }],
          }),
        ],
      },
      { at: new Date('2026-11-20T10:00:00.000Z') },
    );
    expect(plan.workstreams).toHaveLength(2);
    expect(plan.workstreams[1]!.depends_on).toEqual([plan.refs.research]);
    const [a, b, c] = plan.tasks;
    expect(b!.depends_on).toEqual([a!.id]);
    expect(c!.depends_on).toEqual([b!.id, a!.id]);
    expect(Object.keys(plan.refs).sort()).toEqual(['a', 'b', 'build', 'c', 'm1', 'research']);
    expect(plan.tasks.every((t) => t.initiative_id === plan.initiative.id && t.milestone_id === plan.refs.m1)).toBe(true);
    expect(c!.created_at).toBe('2026-11-20T10:00:00.000Z');
  });

  it('names the cycle with its path', () => {
    const issues = issuesOf({ ...base, workstreams: [ws('a', ['c']), ws('b', ['a']), ws('c', ['b'])] });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.message).toMatch(/^dependency cycle: (a → c → b → a|b → a → c → b|c → b → a → c)$/);
    expect(issues[0]!.path).toMatch(/^workstreams\.\d\.depends_on$/);
  });

  it('finds cycles among tasks of one milestone', () => {
    const issues = issuesOf({
      ...base,
      workstreams: [ws('w', [], { milestones: [{ title: 'M', tasks: [task('x', ['y']), task('y', ['x'])] }] })],
    });
    expect(issues[0]).toMatchObject({ path: 'workstreams.0.milestones.0.tasks.0.depends_on', message: 'dependency cycle: x → y → x' });
  });

  it('refuses unknown refs, refs of non-siblings, self-dependencies, repeats and reused refs', () => {
    const issues = issuesOf({
      ...base,
      workstreams: [
        ws('w1', ['nowhere', 'w1']),
        ws('w2', ['w1', 'w1'], {
          milestones: [
            { title: 'M', tasks: [task('t1'), task('w1')] },
            { title: 'N', tasks: [task('t2', ['t1'])] },
          ],
        }),
      ],
    });
    expect(issues).toEqual(
      expect.arrayContaining([
        { path: 'workstreams.0.depends_on.0', message: expect.stringContaining('unknown ref nowhere') },
        { path: 'workstreams.0.depends_on.1', message: 'w1 cannot depend on itself' },
        { path: 'workstreams.1.depends_on.1', message: 'w1 is listed twice' },
        { path: 'workstreams.1.milestones.0.tasks.1.ref', message: expect.stringContaining('ref w1 is already used') },
        { path: 'workstreams.1.milestones.1.tasks.0.depends_on.0', message: expect.stringContaining('unknown ref t1') },
      ]),
    );
  });

  it(`refuses more than ${MAX_TREE_NODES} nodes`, () => {
    const tasks = Array.from({ length: MAX_TREE_NODES }, (_, i) => task(`t${i}`));
    const issues = issuesOf({ ...base, workstreams: [ws('w', [], { milestones: [{ title: 'M', tasks }] })] });
    expect(issues[0]!.message).toContain('at most');
  });
});

describe('findCycle', () => {
  it('finds none in a DAG and one in a loop, also deep ones without recursion', () => {
    expect(findCycle([[1, 2], [2], []])).toBeNull();
    expect(findCycle([[1], [0]])).toEqual([0, 1, 0]);
    const n = 200_000;
    const chain = Array.from({ length: n }, (_, i) => (i + 1 < n ? [i + 1] : []));
    expect(findCycle(chain)).toBeNull();
    chain[n - 1] = [0];
    expect(findCycle(chain)).toHaveLength(n + 1);
  });
});
