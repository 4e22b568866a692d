/** What the end-to-end tests share: the fixture e2e/setup.ts wrote, signing in, and agent calls. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, type APIRequestContext, type Page } from '@playwright/test';

/**
 * The port of this worker's e2e server. Playwright runs spec files on several workers at once, and
 * each worker has a server of its own (playwright.config.ts starts one per worker, e2e/serve.mjs),
 * so that no file sees another's decisions in its inbox or its events in its ledger.
 */
export const E2E_PORT = e2eServerPort(Number(process.env.TEST_PARALLEL_INDEX ?? 0));
/** The address this worker's e2e server answers on. */
export const APP_ORIGIN = `http://127.0.0.1:${E2E_PORT}`;

/** The port of the e2e server for the worker in slot `index` (E2E_PORT, 3100 by default, for the first). */
export function e2eServerPort(index: number): number {
  return Number(process.env.E2E_PORT ?? 3100) + index;
}

export interface Fixture {
  workspaceId: string;
  otherWorkspaceId: string;
  apiKey: string;
  /** A key of the same workspace whose rate-limit window e2e/transport.spec.ts uses up. */
  limitedKey: string;
  password: string;
  users: { owner: string; approver: string; secondApprover: string; viewer: string; stranger: string };
  userIds: { owner: string; approver: string; secondApprover: string };
}

let cached: Fixture | undefined;
export function fixture(): Fixture {
  cached ??= JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '.data', `e2e-${E2E_PORT}`, 'fixture.json'), 'utf8')) as Fixture;
  return cached;
}

export async function signIn(page: Page, email: string): Promise<void> {
  await page.goto('/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(fixture().password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/decisions$/);
}

/** An agent's call to the REST API with the fixture's key. */
export async function agent(request: APIRequestContext, method: 'GET' | 'POST', url: string, data?: unknown) {
  const response = await request.fetch(`/api/v1${url}`, {
    method,
    headers: { Authorization: `Bearer ${fixture().apiKey}`, ...(data ? { 'Content-Type': 'application/json' } : {}) },
    data: data === undefined ? undefined : JSON.stringify(data),
  });
  return { status: response.status(), body: await response.json() };
}

/** An agent raises a decision and asks for attention; returns the decision and the attention answer. */
export async function raiseAndAsk(request: APIRequestContext, decision: Record<string, unknown>, ask: Record<string, unknown> = {}) {
  const created = await agent(request, 'POST', '/decisions', { workspace_id: fixture().workspaceId, ...decision });
  expect(created.status).toBe(201);
  const attention = await agent(request, 'POST', `/decisions/${created.body.decision.id}/attention`, ask);
  expect(attention.status).toBe(200);
  return { decision: created.body.decision, attention: attention.body.data };
}

/** An agent's task and a decision that blocks it, raised in the fixture's workspace; the decision's id. */
export async function raiseBlocking(request: APIRequestContext, taskTitle: string, title: string): Promise<string> {
  const work = await agent(request, 'POST', '/work', { title: taskTitle });
  const raised = await agent(request, 'POST', '/decisions', {
    workspace_id: fixture().workspaceId,
    title,
    blocks_task: true,
    task_id: work.body.data.taskId,
  });
  expect(raised.status).toBe(201);
  return raised.body.decision.id as string;
}

/** A script run as an agent process (Node with tsx's loader, so a signal reaches the script itself), its output collected. */
export function runAgent(script: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: path.join(import.meta.dirname, '..'),
    env: { ...process.env, AWS_API_KEY: fixture().apiKey, AWS_BASE_URL: `${APP_ORIGIN}/api/v1`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { out: '', err: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output.out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.err += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, output, exited };
}
