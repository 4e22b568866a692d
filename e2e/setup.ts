/**
 * Before the end-to-end server starts: a workspace with an owner, two approvers and a viewer who
 * can sign in, an agent's API key, and a second workspace with its own owner. Written to the
 * server's PGlite directory; what the tests need is saved to fixture.json beside it.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { hashPassword } from '@/server/auth/passwords';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { addMember } from '@/server/domain/workspaces/members';
import { createWorkspace } from '@/server/domain/workspaces/create-workspace';
import { parseEnv } from '@/server/env';
import { createRuntime } from '@/server/runtime';

const dir = process.argv[2];
if (!dir) throw new Error('usage: tsx e2e/setup.ts <data dir>');
const password = 'e2e-password-123';

const runtime = await createRuntime(parseEnv({ PGLITE_DATA_DIR: path.join(dir, 'pglite'), SEED_DEMO: 'false' }));
const hash = await hashPassword(password);
const fixture = await runtime.db.transaction(async (tx) => {
  const trace = systemTrace(randomUUID());
  const main = await createWorkspace(tx, trace, {
    name: 'e2e',
    owner: { email: 'owner@e2e.test', displayName: 'Olive Owner', passwordHash: hash },
  });
  const actor: Actor = { type: 'system', id: 'system:e2e', ownerId: main.ownerUserId, workspaceId: main.workspaceId, trace };
  const avery = await addMember(tx, actor, {
    email: 'approver@e2e.test',
    displayName: 'Avery Approver',
    passwordHash: hash,
    role: 'approver',
  });
  // A second approver: decision policies of two approvals (e2e/decision-policies.spec.ts).
  const quinn = await addMember(tx, actor, {
    email: 'approver2@e2e.test',
    displayName: 'Quinn Quorum',
    passwordHash: hash,
    role: 'approver',
  });
  await addMember(tx, actor, { email: 'viewer@e2e.test', displayName: 'Vic Viewer', passwordHash: hash, role: 'viewer' });
  const key = await createApiKey(tx, actor, { name: 'e2e agent' });
  // e2e/transport.spec.ts uses up this one's rate-limit window, so that no other test meets a 429.
  const limited = await createApiKey(tx, actor, { name: 'e2e limited' });
  const elsewhere = await createWorkspace(tx, trace, {
    name: 'elsewhere',
    owner: { email: 'stranger@e2e.test', displayName: 'Sam Stranger', passwordHash: hash },
  });
  return {
    workspaceId: main.workspaceId,
    otherWorkspaceId: elsewhere.workspaceId,
    apiKey: key.secret,
    limitedKey: limited.secret,
    password,
    /** User ids, for decision policies that name people (e2e/decision-policies.spec.ts). */
    userIds: { owner: main.ownerUserId, approver: avery.userId, secondApprover: quinn.userId },
    users: {
      owner: 'owner@e2e.test',
      approver: 'approver@e2e.test',
      secondApprover: 'approver2@e2e.test',
      viewer: 'viewer@e2e.test',
      stranger: 'stranger@e2e.test',
    },
  };
});
await runtime.close();
writeFileSync(path.join(dir, 'fixture.json'), JSON.stringify(fixture, null, 2));
