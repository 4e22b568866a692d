import AxeBuilder from '@axe-core/playwright';
import { expect, test } from '@playwright/test';
import { agent, fixture, signIn } from './support';

test('an initiative page shows the tree and its operating map, linked from a blocking decision', async ({ page, request }) => {
  const created = await agent(request, 'POST', '/initiatives', {
    title: 'Open the Lisbon office',
    workstreams: [
      {
        ref: 'lease',
        name: 'Lease',
        milestones: [{ title: 'Signed', tasks: [{ ref: 'scout', title: 'Scout buildings', estimate_hours: 6 }] }],
      },
      {
        ref: 'hire',
        name: 'Hiring',
        depends_on: ['lease'],
        agent_id: 'recruiter-bot',
        milestones: [{ title: 'First five', tasks: [{ title: 'Post roles', estimate_hours: 2, agent_id: 'recruiter-bot' }] }],
      },
    ],
  });
  expect(created.status).toBe(201);
  const { initiative, refs } = created.body.data;
  const task = created.body.data.tree.workstreams.find((w: { id: string }) => w.id === refs.lease).milestones[0].tasks[0];
  const decision = await agent(request, 'POST', '/decisions', {
    workspace_id: fixture().workspaceId,
    title: 'Sign the lease on Rua Augusta?',
    task_id: task.id,
    blocks_task: true,
  });
  expect(decision.status).toBe(201);

  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.body.decision.id}`);
  await page.getByRole('link', { name: 'the initiative and its operating map' }).click();
  await expect(page).toHaveURL(new RegExp(`/initiatives/${initiative.id}$`));
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Open the Lisbon office');
  await expect(page.getByRole('cell', { name: 'Scout buildings' })).toBeVisible();
  await expect(page.getByRole('region', { name: 'Workstream Hiring' })).toContainText('after Lease');
  const map = page.getByRole('img', { name: /Operating map of Open the Lisbon office: 2 stages, 1 handoff between them/ });
  await expect(map).toBeVisible();
  await expect(map).toContainText('Lease');
  await expect(map).toContainText('Hiring');
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa']).analyze();
  expect(result.violations.map((v) => v.id)).toEqual([]);

  await page.getByRole('link', { name: '← Initiatives' }).click();
  await expect(page.getByRole('link', { name: 'Open the Lisbon office' })).toBeVisible();
  await expect(page.getByRole('img', { name: /Operating map of Open the Lisbon office/ })).toBeVisible();
});
