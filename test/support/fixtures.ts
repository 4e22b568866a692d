/** Request bodies several suites use. */
export const launchTree = {
  title: 'Launch the EU site',
  summary: 'Everything between a green build and a public page.',
  visibility: 'private',
  model_tier: 'premium',
  execution_policy: { mode: 'parallel', max_concurrent_agents: 3 },
  workstreams: [
    {
      ref: 'research',
      name: 'Research',
      goal: 'Know the market',
      domain: 'research',
      agent_id: 'scout',
      milestones: [
        {
          ref: 'm-interviews',
          title: 'Interviews done',
          tasks: [
            { ref: 'recruit', title: 'Recruit ten customers', type: 'research', estimate_hours: 3 },
            {
              ref: 'interview',
              title: 'Run interviews',
              type: 'research',
              estimate_hours: 10.5,
              depends_on: ['recruit'],
              agent_id: 'scout',
            },
          ],
        },
      ],
    },
    {
      ref: 'build',
      name: 'Build',
      domain: 'engineering',
      depends_on: ['research'],
      milestones: [
        { ref: 'm-beta', title: 'Beta', tasks: [{ ref: 'api', title: 'API', priority: 'high', estimate_hours: 20, agent_id: 'coder' }] },
        { ref: 'm-ga', title: 'GA', tasks: [] },
      ],
    },
  ],
};
