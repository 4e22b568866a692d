/**
 * Artifacts: what agents deliver, registered with the digest of their bytes. An artifact
 * row is a projection of its `artifact.registered` event (server/domain/artifacts/events.ts artifactRow); the bytes of
 * a small artifact are not: they live in `artifact_contents`, once per workspace and digest however
 * often they are registered, and the ledger keeps only their digest, so that anyone holding a copy
 * can check it against the ledger whether or not the service still stores it.
 */
import { sql } from 'drizzle-orm';
import { bigint, check, index, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { aggregateColumns, bytea, ts } from './columns';
import { runs } from './runs';
import { tasks } from './work';
import { workspaces } from './workspaces';

/**
 * The most content one artifact stores in `artifact_contents` (its decoded bytes); a larger one is
 * registered by URI. Here, beside the table, so that the bundle checker (server/ledger) holds
 * delivered files to the same limit as the service that registers them.
 */
export const MAX_STORED_BYTES = 1024 * 1024;

/** Where an artifact's bytes are: stored here (≤ 1 MiB), or at the URI the agent gave (never fetched). */
export const artifactStorages = ['stored', 'external'] as const;
export type ArtifactStorage = (typeof artifactStorages)[number];

export const artifacts = pgTable(
  'artifacts',
  {
    ...aggregateColumns(),
    /** A type_code of the catalog (GET /artifact-types). */
    artifactType: text('artifact_type').notNull(),
    title: text('title').notNull(),
    taskId: uuid('task_id').references(() => tasks.id),
    runId: uuid('run_id').references(() => runs.id),
    /** As registered (lower-cased type and subtype, parameters kept). */
    mediaType: text('media_type').notNull(),
    /** The SHA-256 of the bytes, 64 lower-case hex digits (the API writes it `sha256:<hex>`). */
    sha256: text('sha256').notNull(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull(),
    storage: text('storage', { enum: artifactStorages }).notNull(),
    /** Where an external artifact is; null for a stored one. */
    uri: text('uri'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>(),
    createdByType: text('created_by_type').notNull(),
    createdById: text('created_by_id').notNull(),
    /** When its stored bytes were removed (DELETE …/content, or the workspace's retention); its digest stays. */
    contentRemovedAt: ts('content_removed_at'),
  },
  (t) => [
    // GET /artifacts pages newest first, by workspace, and by task or run.
    index('artifacts_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
    index('artifacts_task_idx').on(t.taskId),
    index('artifacts_run_idx').on(t.runId),
    check('artifacts_sha256_check', sql`${t.sha256} ~ '^[0-9a-f]{64}$'`),
    check('artifacts_storage_check', sql`(${t.storage} = 'stored') = (${t.uri} is null)`),
  ],
);

/** The stored bytes of small artifacts, one row per workspace and digest. */
export const artifactContents = pgTable(
  'artifact_contents',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    sha256: text('sha256').notNull(),
    content: bytea('content').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    /** When these bytes were last registered: the workspace's retention counts from here. */
    lastRegisteredAt: ts('last_registered_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.sha256] }), index('artifact_contents_registered_idx').on(t.lastRegisteredAt)],
);

/**
 * The bytes a workspace holds in `artifact_contents`, kept beside them in the same transactions
 * (server/domain/artifacts/quota.ts): the quota (ARTIFACT_QUOTA_BYTES) is checked against this one
 * row, whose lock also makes two registrations at once take their turns, instead of summing every
 * stored content at each registration.
 */
export const artifactUsage = pgTable(
  'artifact_usage',
  {
    workspaceId: uuid('workspace_id')
      .primaryKey()
      .references(() => workspaces.id),
    storedBytes: bigint('stored_bytes', { mode: 'number' }).notNull().default(0),
  },
  (t) => [check('artifact_usage_stored_bytes_check', sql`${t.storedBytes} >= 0`)],
);
