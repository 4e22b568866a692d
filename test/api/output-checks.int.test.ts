/**
 * Every mutation's answer is checked against its output schema, and a write's before COMMIT: the
 * operations whose answers once went unchecked (DELETE /webhooks/{id}, POST /webhooks/{id}/test,
 * the interface's members and API-key writes) refuse a body of the wrong shape with 500 and leave
 * nothing behind. Their services are made to answer wrongly here (vi.mock), as a bug would.
 */
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { z } from 'zod';
import { apiKeys, invitations, memberships } from '@/db/schema';
import { appRouter } from '@/server/api/root';
import { factsOf, proceduresOf } from '@/server/api/trpc-internals';
import { startTestApp, type TestApp } from '../support/app';
import { internalClient } from '../support/internal';

/** Which services answer a wrong shape (after doing their writes). */
const wrong = vi.hoisted(() => ({ on: false }));

vi.mock('@/server/domain/webhooks/endpoints', async (importOriginal) => {
  const real = await importOriginal<typeof import('@/server/domain/webhooks/endpoints')>();
  return {
    ...real,
    deleteEndpoint: async (...args: Parameters<typeof real.deleteEndpoint>) => {
      const done = await real.deleteEndpoint(...args);
      return wrong.on ? { ...done, deleted: 'yes' } : done;
    },
    requestTest: async (...args: Parameters<typeof real.requestTest>) => {
      const done = await real.requestTest(...args);
      return wrong.on ? { ...done, sequence: String(done.sequence) } : done;
    },
  };
});
vi.mock('@/server/domain/workspaces/members', async (importOriginal) => {
  const real = await importOriginal<typeof import('@/server/domain/workspaces/members')>();
  return {
    ...real,
    changeRole: async (...args: Parameters<typeof real.changeRole>) => {
      const done = await real.changeRole(...args);
      return wrong.on ? { ...done, revokedKeys: -1 } : done;
    },
  };
});
vi.mock('@/server/domain/workspaces/invitations', async (importOriginal) => {
  const real = await importOriginal<typeof import('@/server/domain/workspaces/invitations')>();
  return {
    ...real,
    createInvitation: async (...args: Parameters<typeof real.createInvitation>) => {
      const done = await real.createInvitation(...args);
      return wrong.on ? { ...done, invitation: { ...done.invitation, state: 'sent' } } : done;
    },
  };
});
vi.mock('@/server/domain/api-keys/api-keys', async (importOriginal) => {
  const real = await importOriginal<typeof import('@/server/domain/api-keys/api-keys')>();
  return {
    ...real,
    createApiKey: async (...args: Parameters<typeof real.createApiKey>) => {
      const { secret: _secret, ...done } = await real.createApiKey(...args);
      return wrong.on ? done : { ...done, secret: _secret };
    },
  };
});

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});
afterEach(() => {
  wrong.on = false;
});

const PUBLIC_URL = 'http://93.184.216.34/hooks/aws';

async function endpoint() {
  const ws = await app.createWorkspace();
  const res = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url: PUBLIC_URL } });
  expect(res.status, res.text).toBe(201);
  return { ws, id: res.body.data.id as string };
}

describe('the REST writes that went unchecked', () => {
  it('DELETE /webhooks/{id}: a wrong answer is 500, and the endpoint is still there', async () => {
    const { ws, id } = await endpoint();
    wrong.on = true;
    await app.expectUnchanged(async () => {
      const res = await app.request('DELETE', `/webhooks/${id}`, { key: ws.apiKey });
      expect(res.status, res.text).toBe(500);
    });
    wrong.on = false;
    expect((await app.request('GET', `/webhooks/${id}`, { key: ws.apiKey })).status).toBe(200);
  });

  it('POST /webhooks/{id}/test: a wrong answer is 500, and no test event is recorded', async () => {
    const { ws, id } = await endpoint();
    wrong.on = true;
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', `/webhooks/${id}/test`, { key: ws.apiKey });
      expect(res.status, res.text).toBe(500);
    });
    wrong.on = false;
    expect((await app.request('POST', `/webhooks/${id}/test`, { key: ws.apiKey })).status).toBe(202);
  });
});

describe('the interface’s writes that went unchecked', () => {
  it('members.changeRole: a wrong answer is 500, and the role is unchanged', async () => {
    const owner = await app.member('owner');
    const approver = await app.member('approver');
    const api = internalClient(app.runtime);
    wrong.on = true;
    await app.expectUnchanged(async () => {
      const res = await api.mutate(
        'members.changeRole',
        { workspace_id: app.ws.workspaceId, user_id: approver.userId, role: 'viewer' },
        { session: owner.session },
      );
      expect(res.status).toBe(500);
    });
    const [row] = await app.runtime.db
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.workspaceId, app.ws.workspaceId), eq(memberships.userId, approver.userId)));
    expect(row?.role).toBe('approver');
  });

  it('members.invite: a wrong answer is 500, and no invitation is left', async () => {
    const owner = await app.member('owner');
    const email = `invitee-${randomUUID()}@example.com`;
    wrong.on = true;
    await app.expectUnchanged(async () => {
      const res = await internalClient(app.runtime).mutate(
        'members.invite',
        { workspace_id: app.ws.workspaceId, email, role: 'viewer' },
        { session: owner.session },
      );
      expect(res.status).toBe(500);
    });
    expect(await app.runtime.db.select().from(invitations).where(eq(invitations.email, email))).toHaveLength(0);
  });

  it('apiKeys.create: an answer without the secret is 500, and no key is left', async () => {
    const owner = await app.member('owner');
    const name = `key-${randomUUID()}`;
    wrong.on = true;
    await app.expectUnchanged(async () => {
      const res = await internalClient(app.runtime).mutate(
        'apiKeys.create',
        { workspace_id: app.ws.workspaceId, name },
        { session: owner.session },
      );
      expect(res.status).toBe(500);
    });
    expect(await app.runtime.db.select().from(apiKeys).where(eq(apiKeys.name, name))).toHaveLength(0);
  });
});

describe('every mutation', () => {
  it('declares an output schema that checks something (not z.any() or z.unknown())', () => {
    const mutations = Object.entries(proceduresOf(appRouter)).filter(([, p]) => factsOf(p).type === 'mutation');
    expect(mutations.length).toBeGreaterThan(30);
    const unchecked = mutations
      .filter(([, p]) => {
        const output = factsOf(p).output as z.ZodType | undefined;
        return !output || ['any', 'unknown'].includes(output._zod.def.type);
      })
      .map(([path]) => path);
    expect(unchecked).toEqual([]);
  });
});
