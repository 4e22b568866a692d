import { describe, expect, it } from 'vitest';
import { ArtifactCatalog, type ArtifactType } from './catalog';

const type = (code: string): ArtifactType => ({
  type_code: code,
  label: code,
  summary: '',
  domain: 'd',
  stage: 's',
  workflow: 'w',
  default_persona: 'p',
  tags: [],
  is_deliverable: true,
});

function setup() {
  let clock = 0;
  let loads = 0;
  let fail = false;
  let data = [type('a')];
  const catalog = new ArtifactCatalog(
    async () => {
      loads++;
      if (fail) throw new Error('database down');
      return data;
    },
    300_000,
    () => clock,
  );
  return {
    catalog,
    tick: (ms: number) => (clock += ms),
    loads: () => loads,
    fail: (v: boolean) => (fail = v),
    set: (d: ArtifactType[]) => (data = d),
  };
}

describe('ArtifactCatalog', () => {
  it('loads once per five minutes', async () => {
    const t = setup();
    await t.catalog.read();
    t.tick(299_999);
    await t.catalog.read();
    expect(t.loads()).toBe(1);
    t.tick(1);
    await t.catalog.read();
    expect(t.loads()).toBe(2);
  });

  it('serves the last good load, marked stale, while refreshes fail, then recovers', async () => {
    const t = setup();
    const first = await t.catalog.read();
    expect(first.stale).toBe(false);
    t.fail(true);
    t.tick(300_000);
    const stale = await t.catalog.read();
    expect(stale).toMatchObject({ types: first.types, stale: true });
    // Another validator for the stale representation: If-None-Match with the fresh one does not match it.
    expect(stale.etag).not.toBe(first.etag);
    t.fail(false);
    t.set([type('a'), type('b')]);
    t.tick(10_000);
    const fresh = await t.catalog.read();
    expect(fresh.stale).toBe(false);
    expect(fresh.types).toHaveLength(2);
    expect(fresh.etag).not.toBe(first.etag);
  });

  it('fails when there has never been a good load', async () => {
    const t = setup();
    t.fail(true);
    await expect(t.catalog.read()).rejects.toThrow('database down');
  });

  it('with a good load in hand, does not wait long for a refresh that hangs', async () => {
    let release: () => void = () => undefined;
    let calls = 0;
    let clock = 0;
    const catalog = new ArtifactCatalog(
      () => {
        calls++;
        if (calls === 1) return Promise.resolve([type('a')]);
        return new Promise((resolve) => (release = () => resolve([type('a'), type('b')])));
      },
      300_000,
      () => clock,
      20,
    );
    await catalog.read();
    clock += 300_000;
    const started = Date.now();
    const served = await catalog.read();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(served.types).toHaveLength(1);
    release();
    await new Promise((r) => setTimeout(r, 0));
    expect((await catalog.read()).types).toHaveLength(2);
  });

  it('refreshes once for concurrent readers', async () => {
    const t = setup();
    await Promise.all([t.catalog.read(), t.catalog.read(), t.catalog.read()]);
    expect(t.loads()).toBe(1);
  });
});
