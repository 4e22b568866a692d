/**
 * The artifact type catalog, cached in the process for five minutes. When a refresh fails, the
 * last good load keeps being served, marked stale, until a refresh succeeds; with no good load
 * yet, the failure is the caller's (503).
 */
import { asc } from 'drizzle-orm';
import type { Database } from '@/db';
import { artifactTypes } from '@/db/schema';
import { digestOf } from '@/server/ledger/canonical';
import { AppError, isStoreUnavailable } from '@/server/errors';
import { describeError, log } from '@/server/log';

export interface ArtifactType {
  type_code: string;
  label: string;
  summary: string;
  domain: string;
  stage: string;
  workflow: string;
  default_persona: string;
  tags: string[];
  is_deliverable: boolean;
}

export interface CatalogRead {
  types: ArtifactType[];
  /** True when served from the last good load because a refresh failed. */
  stale: boolean;
  /** A strong validator of the content: equal catalogs, equal ETags. */
  etag: string;
}

const CATALOG_TTL_MS = 5 * 60 * 1000;
/** How long a reader holding a good (expired) load waits for its refresh before being served it. */
const REFRESH_WAIT_MS = 1000;

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class ArtifactCatalog {
  private good: { types: ArtifactType[]; etag: string; loadedAt: number } | null = null;
  private refreshing: Promise<void> | null = null;
  private staleSince: number | null = null;

  constructor(
    private readonly load: () => Promise<ArtifactType[]>,
    private readonly ttlMs = CATALOG_TTL_MS,
    private readonly now: () => number = Date.now,
    private readonly refreshWaitMs = REFRESH_WAIT_MS,
  ) {}

  async read(): Promise<CatalogRead> {
    if (!this.good || this.now() - this.good.loadedAt >= this.ttlMs) {
      // One refresh at a time; concurrent readers wait for it, but with a good load in hand no
      // longer than REFRESH_WAIT_MS: a database that hangs instead of failing does not hold them up.
      this.refreshing ??= this.refresh().finally(() => {
        this.refreshing = null;
      });
      if (this.good) await Promise.race([this.refreshing, delay(this.refreshWaitMs)]);
      else await this.refreshing;
    }
    if (!this.good) throw new Error('artifact catalog unavailable');
    const stale = this.staleSince !== null;
    // A stale answer is another representation: its validator differs, so a client revalidating
    // a fresh copy hears that the catalog is now served stale (and the reverse).
    return { types: this.good.types, stale, etag: stale ? this.good.etag.replace(/"$/, '-stale"') : this.good.etag };
  }

  /** Forgets the age of the current load, so the next read refreshes (tests, and after a catalog migration). */
  expire(): void {
    if (this.good) this.good.loadedAt = -Infinity;
  }

  private async refresh(): Promise<void> {
    try {
      const types = await this.load();
      this.good = { types, etag: `"${digestOf(types).slice(7, 39)}"`, loadedAt: this.now() };
      this.staleSince = null;
    } catch (err) {
      if (!this.good) throw err;
      // Serve the last good load; try again on the next read after a short pause, not on every read.
      this.staleSince ??= this.now();
      this.good.loadedAt = this.now() - this.ttlMs + Math.min(this.ttlMs, 10_000);
      log('warn', 'artifact catalog refresh failed; serving the last good load', { error: describeError(err) });
    }
  }
}

async function loadArtifactTypes(db: Database): Promise<ArtifactType[]> {
  const rows = await db.select().from(artifactTypes).orderBy(asc(artifactTypes.sortOrder), asc(artifactTypes.typeCode));
  return rows.map((r) => ({
    type_code: r.typeCode,
    label: r.label,
    summary: r.summary,
    domain: r.domain,
    stage: r.stage,
    workflow: r.workflow,
    default_persona: r.defaultPersona,
    tags: r.tags,
    is_deliverable: r.isDeliverable,
  }));
}

const catalogs = new WeakMap<Database, ArtifactCatalog>();

/** The catalog cache of a database (one per process and database). */
export function catalogFor(db: Database): ArtifactCatalog {
  let catalog = catalogs.get(db);
  if (!catalog) catalogs.set(db, (catalog = new ArtifactCatalog(() => loadArtifactTypes(db))));
  return catalog;
}

/** The catalog as served: 503 service_unavailable when it cannot be loaded and no good load is kept. */
export async function readCatalog(db: Database): Promise<CatalogRead> {
  try {
    return await catalogFor(db).read();
  } catch (err) {
    if (isStoreUnavailable(err)) throw err;
    throw new AppError('service_unavailable', 'The artifact type catalog cannot be loaded right now.');
  }
}
