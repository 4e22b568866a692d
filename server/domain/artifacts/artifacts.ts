/**
 * Artifacts (docs/contract.md §4.17): what agents deliver, registered with the SHA-256 of
 * their bytes. Small content (≤ 1 MiB) is stored here, once per workspace and digest however often
 * it is registered; a larger artifact stays where the agent put it and is registered by its URI,
 * digest and size, which the service records as claimed and never fetches. The `artifact.registered`
 * event carries the digest, size, media type and links, never the bytes: the ledger proves which
 * bytes were delivered whether or not the service still holds them.
 */
import { createHash, randomUUID } from 'node:crypto';
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import { query, type Database, type Executor, type Tx } from '@/db';
import { artifactContents, artifacts, MAX_STORED_BYTES, runs, tasks } from '@/db/schema';
import { AppError } from '@/server/errors';
import { appendEventsAtCommit } from '@/server/ledger/append';
import type { PayloadOf } from '@/server/ledger/event-types';
import { systemActor, type Actor } from '../actor';
import type { ArtifactType } from '../artifact-types/catalog';
import { olderThan, type CreatedKey } from '../paging';
import { assertLeaseHeld } from '../runs/lease';
import { artifactRow } from './events';
import { chargeStoredBytes, releaseStoredBytes } from './quota';

export type ArtifactRow = typeof artifacts.$inferSelect;

/** URI schemes an external artifact may name: places bytes are kept, never code or local files. */
export const URI_SCHEMES = ['https', 'http', 's3', 'gs'] as const;

export interface RegisterInput {
  artifact_type: string;
  title: string;
  task_id?: string;
  run_id?: string;
  media_type: string;
  /** The bytes, base64: stored here. */
  content?: string;
  /** Where the bytes are, with their digest and size: registered as claimed. */
  uri?: string;
  sha256?: string;
  size_bytes?: number;
  metadata?: Record<string, unknown>;
}

/** 400 validation_failed for one member, named as the schema's refusals name theirs. */
const invalid = (path: string, message: string) =>
  new AppError('validation_failed', `${path}: ${message}.`, { issues: [{ path, message }] });

/** The hex of a `sha256:<hex>` or bare 64-hex digest, lower-cased. */
const digestHex = (digest: string) => digest.replace(/^sha256:/i, '').toLowerCase();

/**
 * Decodes standard base64 (RFC 4648 §4, padded), refusing anything else: Buffer.from would skip
 * characters outside the alphabet and decode what is left, so a mangled upload would be stored as
 * other bytes than the agent meant.
 */
function decodeBase64(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

/** The bytes, digest and size of what is registered: decoded and hashed here, or as the agent claims them. */
function deliveredBytes(input: RegisterInput): { content: Buffer | null; sha256: string; sizeBytes: number; uri: string | null } {
  if (input.content !== undefined) {
    if (input.uri !== undefined) throw invalid('uri', 'give content or a uri, not both');
    const content = decodeBase64(input.content);
    if (!content) throw invalid('content', 'must be standard base64 (RFC 4648, padded)');
    if (content.length > MAX_STORED_BYTES) {
      throw new AppError(
        'payload_too_large',
        `content is ${content.length} bytes decoded; at most ${MAX_STORED_BYTES} are stored. Register a larger artifact by uri.`,
        {
          limitBytes: MAX_STORED_BYTES,
          fields: ['content'],
        },
      );
    }
    const sha256 = createHash('sha256').update(content).digest('hex');
    if (input.sha256 !== undefined && digestHex(input.sha256) !== sha256) {
      throw invalid('sha256', `does not match the content (its digest is sha256:${sha256})`);
    }
    if (input.size_bytes !== undefined && input.size_bytes !== content.length) {
      throw invalid('size_bytes', `does not match the content (${content.length} bytes)`);
    }
    return { content, sha256, sizeBytes: content.length, uri: null };
  }
  if (input.uri === undefined) throw invalid('content', 'give content (base64) or a uri with its sha256 and size_bytes');
  if (input.sha256 === undefined) throw invalid('sha256', 'is required with a uri');
  if (input.size_bytes === undefined) throw invalid('size_bytes', 'is required with a uri');
  return { content: null, sha256: digestHex(input.sha256), sizeBytes: input.size_bytes, uri: input.uri };
}

/** The links' rows, in the workspace: 404 for one that is not (another workspace's included). */
async function linksOf(tx: Tx, workspaceId: string, input: RegisterInput) {
  const [task, run] = await Promise.all([
    input.task_id
      ? tx
          .select({ id: tasks.id })
          .from(tasks)
          .where(and(eq(tasks.id, input.task_id), eq(tasks.workspaceId, workspaceId)))
          .then((r) => r[0])
      : undefined,
    input.run_id
      ? tx
          .select()
          .from(runs)
          .where(and(eq(runs.id, input.run_id), eq(runs.workspaceId, workspaceId)))
          .then((r) => r[0])
      : undefined,
  ]);
  if (input.task_id && !task) throw new AppError('not_found', 'No task with that id in your workspace.', { fields: ['task_id'] });
  if (input.run_id && !run) throw new AppError('not_found', 'No run with that id in your workspace.', { fields: ['run_id'] });
  if (run && input.task_id && run.taskId !== input.task_id) throw invalid('run_id', 'is a run of another task than task_id');
  return { taskId: input.task_id ?? run?.taskId ?? null, run };
}

/**
 * Registers an artifact: its row, its bytes when they are small (once per workspace and digest),
 * and its `artifact.registered` event, all in the caller's transaction. A run named by `run_id`
 * must still hold its lease (409 lease_expired otherwise): a stale agent's deliverable is not
 * recorded against a task another agent now holds.
 */
export async function registerArtifact(
  tx: Tx,
  actor: Actor,
  input: RegisterInput,
  catalog: readonly ArtifactType[],
  quotaBytes: number,
): Promise<ArtifactRow> {
  if (!catalog.some((t) => t.type_code === input.artifact_type)) {
    throw invalid('artifact_type', `is not in the catalog (GET /artifact-types); one of: ${catalog.map((t) => t.type_code).join(', ')}`);
  }
  const bytes = deliveredBytes(input);
  const { taskId, run } = await linksOf(tx, actor.workspaceId, input);
  const now = new Date();
  if (run) assertLeaseHeld(run, now);
  const payload: PayloadOf<'artifact.registered'> = {
    artifact_id: randomUUID(),
    artifact_type: input.artifact_type,
    title: input.title,
    media_type: input.media_type,
    digest: `sha256:${bytes.sha256}`,
    size_bytes: bytes.sizeBytes,
    storage: bytes.content ? 'stored' : 'external',
    uri: bytes.uri,
    task_id: taskId,
    run_id: run?.id ?? null,
    metadata: input.metadata ?? null,
  };
  // The row is what the replay makes of the event: the write and the rebuild give one row.
  const row = artifactRow(payload, { workspaceId: actor.workspaceId, version: 1, at: now }, { actorType: actor.type, actorId: actor.id });
  const [, stored] = await Promise.all([
    tx.insert(artifacts).values(row),
    bytes.content
      ? tx
          .insert(artifactContents)
          .values({ workspaceId: actor.workspaceId, sha256: bytes.sha256, content: bytes.content, createdAt: now, lastRegisteredAt: now })
          // Stored once: a second registration of the same bytes only restarts their retention.
          .onConflictDoUpdate({
            target: [artifactContents.workspaceId, artifactContents.sha256],
            set: { lastRegisteredAt: now },
          })
          // A row this statement inserted has no xmax; one it updated has this transaction's.
          .returning({ inserted: sql<boolean>`(xmax = 0)` })
      : undefined,
  ]);
  // Only new bytes count against the quota: the same bytes again are stored once.
  if (bytes.content && stored?.[0]?.inserted) await chargeStoredBytes(tx, actor.workspaceId, bytes.sizeBytes, quotaBytes);
  appendEventsAtCommit(tx, actor, [{ aggregateType: 'artifact', aggregateId: row.id, eventType: 'artifact.registered', payload }], now);
  return row;
}

/**
 * The artifacts a run's agent names as what it delivered (POST /runs/{runId}/finish artifact_ids):
 * each must be the workspace's (404 otherwise) and not another task's or another run's (400).
 */
export async function checkRunArtifacts(
  tx: Tx,
  run: { id: string; taskId: string; workspaceId: string },
  ids: readonly string[],
): Promise<string[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const rows = await tx
    .select({ id: artifacts.id, taskId: artifacts.taskId, runId: artifacts.runId })
    .from(artifacts)
    .where(and(eq(artifacts.workspaceId, run.workspaceId), inArray(artifacts.id, unique)));
  const found = new Map(rows.map((r) => [r.id, r]));
  const missing = unique.filter((id) => !found.has(id));
  if (missing.length > 0) {
    throw new AppError('not_found', `No artifact ${missing.join(', ')} in your workspace.`, { fields: ['artifact_ids'] });
  }
  const foreign = rows.filter((r) => (r.taskId !== null && r.taskId !== run.taskId) || (r.runId !== null && r.runId !== run.id));
  if (foreign.length > 0) {
    throw invalid('artifact_ids', `${foreign.map((r) => r.id).join(', ')} belong to another task or run`);
  }
  return unique;
}

export interface ArtifactFilters {
  taskId?: string;
  runId?: string;
  artifactType?: string;
  /** Only these types (the catalog's deliverable ones, or the others). */
  deliverableTypes?: readonly string[];
}

/** GET /artifacts: the workspace's artifacts, newest first. */
export async function listArtifacts(
  db: Executor,
  workspaceId: string,
  q: ArtifactFilters & { after?: CreatedKey; limit: number },
): Promise<ArtifactRow[]> {
  const where: SQL[] = [eq(artifacts.workspaceId, workspaceId), olderThan(artifacts.createdAt, artifacts.id, q.after)];
  if (q.taskId) where.push(eq(artifacts.taskId, q.taskId));
  if (q.runId) where.push(eq(artifacts.runId, q.runId));
  if (q.artifactType) where.push(eq(artifacts.artifactType, q.artifactType));
  if (q.deliverableTypes) where.push(q.deliverableTypes.length ? inArray(artifacts.artifactType, [...q.deliverableTypes]) : sql`false`);
  return db
    .select()
    .from(artifacts)
    .where(and(...where))
    .orderBy(desc(artifacts.createdAt), desc(artifacts.id))
    .limit(q.limit);
}

export async function findArtifact(db: Executor, workspaceId: string, id: string): Promise<ArtifactRow | undefined> {
  const [row] = await db
    .select()
    .from(artifacts)
    .where(and(eq(artifacts.id, id), eq(artifacts.workspaceId, workspaceId)));
  return row;
}

/**
 * Removes the stored bytes of `digest` from the workspace (an owner's DELETE, or its retention):
 * every artifact of the workspace holding those bytes loses them, each with an
 * `artifact.content_removed` event, and keeps its digest, so a copy kept elsewhere still checks
 * against the ledger. The artifacts whose bytes went, as they are now.
 */
async function removeContent(
  tx: Tx,
  actor: Actor,
  digest: string,
  reason: 'deleted' | 'retention',
  now = new Date(),
  registeredBefore?: Date,
): Promise<ArtifactRow[]> {
  const gone = await tx
    .delete(artifactContents)
    .where(
      and(
        eq(artifactContents.workspaceId, actor.workspaceId),
        eq(artifactContents.sha256, digest),
        // Retention: not bytes registered again since they were picked.
        registeredBefore ? sql`${artifactContents.lastRegisteredAt} <= ${registeredBefore.toISOString()}::timestamptz` : sql`true`,
      ),
    )
    .returning({ bytes: sql<number>`octet_length(${artifactContents.content})` });
  if (registeredBefore && gone.length === 0) return [];
  await releaseStoredBytes(
    tx,
    actor.workspaceId,
    gone.reduce((sum, g) => sum + Number(g.bytes), 0),
  );
  const removed = await tx
    .update(artifacts)
    .set({ contentRemovedAt: now, version: sql`${artifacts.version} + 1`, updatedAt: now })
    .where(
      and(
        eq(artifacts.workspaceId, actor.workspaceId),
        eq(artifacts.sha256, digest),
        eq(artifacts.storage, 'stored'),
        sql`${artifacts.contentRemovedAt} is null`,
      ),
    )
    .returning();
  removed.sort((a, b) => +a.createdAt - +b.createdAt || (a.id < b.id ? -1 : 1));
  if (removed.length === 0) return removed;
  appendEventsAtCommit(
    tx,
    actor,
    removed.map((a) => ({
      aggregateType: 'artifact' as const,
      aggregateId: a.id,
      eventType: 'artifact.content_removed' as const,
      payload: { artifact_id: a.id, digest: `sha256:${digest}`, reason, removed_at: now.toISOString() },
    })),
    now,
  );
  return removed;
}

/**
 * The retention job's part (server/retention.ts): the stored bytes of artifacts that a workspace
 * keeps for `artifact_content_days` and that were last registered longer ago than that go, each
 * digest with its `artifact.content_removed` events (reason `retention`, by system:retention), one
 * transaction per workspace. At most `limit` digests a call, oldest first; how many went.
 */
export async function pruneArtifactContents(db: Database, now = new Date(), limit = 1000): Promise<number> {
  const due = await query<{ workspace_id: string; sha256: string; cutoff: string }>(
    db,
    sql`select c.workspace_id, c.sha256, (${now.toISOString()}::timestamptz - w.artifact_content_days * interval '1 day')::text as cutoff
          from artifact_contents c join workspaces w on w.id = c.workspace_id
         where w.artifact_content_days is not null
           and c.last_registered_at <= ${now.toISOString()}::timestamptz - w.artifact_content_days * interval '1 day'
         order by c.last_registered_at
         limit ${limit}`,
  );
  const byWorkspace = new Map<string, { sha256: string; cutoff: string }[]>();
  for (const d of due) byWorkspace.set(d.workspace_id, [...(byWorkspace.get(d.workspace_id) ?? []), d]);
  for (const [workspaceId, digests] of byWorkspace) {
    await db.transaction(async (tx) => {
      const actor = await systemActor(tx, workspaceId, 'system:retention');
      for (const d of digests) await removeContent(tx, actor, d.sha256, 'retention', now, new Date(d.cutoff));
    });
  }
  return due.length;
}

/**
 * DELETE /artifacts/{id}/content: an owner removes the artifact's stored bytes (and so every
 * artifact's of the workspace that holds the same bytes). Removing them again changes nothing.
 * 404 for an artifact registered by URI: its bytes were never here.
 */
export async function deleteArtifactContent(tx: Tx, actor: Actor, id: string): Promise<ArtifactRow> {
  const row = await findArtifact(tx, actor.workspaceId, id);
  if (!row) throw new AppError('not_found', 'No such artifact in your workspace.');
  if (row.storage !== 'stored') {
    throw new AppError('not_found', `This artifact's bytes are not stored here: they are at its uri (digest sha256:${row.sha256}).`);
  }
  if (row.contentRemovedAt) return row;
  const removed = await removeContent(tx, actor, row.sha256, 'deleted');
  return removed.find((r) => r.id === row.id) ?? row;
}

/** The stored bytes of an artifact, or null when it was registered by URI or they were removed. */
export async function storedContent(db: Executor, row: ArtifactRow): Promise<Buffer | null> {
  if (row.storage !== 'stored' || row.contentRemovedAt) return null;
  const [stored] = await db
    .select({ content: artifactContents.content })
    .from(artifactContents)
    .where(and(eq(artifactContents.workspaceId, row.workspaceId), eq(artifactContents.sha256, row.sha256)));
  return stored?.content ?? null;
}
