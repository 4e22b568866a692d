/** Driving the ledger's tree in tests: writes that add events, and the integrator run until current. */
import { expect } from 'vitest';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { integrateWorkspace } from '@/server/ledger/integrator';
import type { TestApp, TestWorkspace } from './app';

/** What the integrator signs with in `app`: its APP_URL and instance secret, as the job does. */
export function signingSettings(app: TestApp): SigningSettings {
  return { appUrl: app.runtime.env.APP_URL, secret: app.runtime.secrets.ledger };
}

/** `n` POST /work (an event each), twenty at a time. */
export async function writeWork(app: TestApp, ws: TestWorkspace, n: number): Promise<void> {
  for (let i = 0; i < n; i += 20) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(20, n - i) }, (_, j) =>
        app.request('POST', '/work', { key: ws.apiKey, body: { title: `leaf ${i + j}` } }),
      ),
    );
    for (const res of answers) expect(res.status, res.text).toBe(201);
  }
}

/** Runs the integrator over the workspace until its tree holds every event, as the job would. */
export async function integrate(app: TestApp, ws: TestWorkspace): Promise<void> {
  while ((await integrateWorkspace(app.runtime.db, ws.workspaceId, signingSettings(app))).outcome === 'extended');
}

/** An owner's naming of the witness whose verifier key is `vkey` (POST /ledger/witnesses, with the workspace's key): its id. */
export async function nameWitness(app: TestApp, ws: TestWorkspace, vkey: string): Promise<string> {
  const res = await app.request('POST', '/ledger/witnesses', { key: ws.apiKey, body: { vkey } });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id as string;
}
