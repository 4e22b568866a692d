/**
 * Artifacts (issue 40; docs/contract.md §4.17): what agents deliver, registered with the SHA-256 of
 * their bytes. Small content (≤ 1 MiB) is stored here, once per workspace and digest however often
 * it is registered; a larger artifact stays where the agent put it and is registered by its URI,
 * digest and size, which the service records as claimed and never fetches. The `artifact.registered`
 * event carries the digest, size, media type and links, never the bytes: the ledger proves which
 * bytes were delivered whether or not the service still holds them.
 */
import { createHash, randomUUID } from 'node:crypto';
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { artifactContents, artifacts, runs, tasks } from '@/db/schema';
import { AppError } from '@/server/errors';
import { appendEventsAtCommit } from '@/server/ledger/append';
import type { Actor } from '../actor';
import type { ArtifactType } from '../artifact-types/catalog';
import { olderThan, type CreatedKey } from '../paging';
import { assertLeaseHeld } from '../runs/lease';

export type ArtifactRow = typeof artifacts.$inferSelect;

/** The most content a registration stores, after base64 decoding. */
export const MAX_STORED_BYTES = 1024 * 1024;

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
export async function registerArtifact(tx: Tx, actor: Actor, input: RegisterInput, catalog: readonly ArtifactType[]): Promise<ArtifactRow> {
  if (!catalog.some((t) => t.type_code === input.artifact_type)) {
    throw invalid('artifact_type', `is not in the catalog (GET /artifact-types); one of: ${catalog.map((t) => t.type_code).join(', ')}`);
  }
  const bytes = deliveredBytes(input);
  const { taskId, run } = await linksOf(tx, actor.workspaceId, input);
  const now = new Date();
  if (run) assertLeaseHeld(run, now);
  const row: ArtifactRow = {
    id: randomUUID(),
    workspaceId: actor.workspaceId,
    version: 1,
    createdAt: now,
    updatedAt: now,
    artifactType: input.artifact_type,
    title: input.title,
    taskId,
    runId: run?.id ?? null,
    mediaType: input.media_type,
    sha256: bytes.sha256,
    sizeBytes: bytes.sizeBytes,
    storage: bytes.content ? 'stored' : 'external',
    uri: bytes.uri,
    metadata: input.metadata ?? null,
    createdByType: actor.type,
    createdById: actor.id,
  };
  await Promise.all([
    tx.insert(artifacts).values(row),
    bytes.content
      ? tx
          .insert(artifactContents)
          .values({ workspaceId: actor.workspaceId, sha256: bytes.sha256, content: bytes.content, createdAt: now })
          .onConflictDoNothing()
      : undefined,
  ]);
  appendEventsAtCommit(
    tx,
    actor,
    [
      {
        aggregateType: 'artifact',
        aggregateId: row.id,
        eventType: 'artifact.registered',
        payload: {
          artifact_id: row.id,
          artifact_type: row.artifactType,
          title: row.title,
          media_type: row.mediaType,
          digest: `sha256:${row.sha256}`,
          size_bytes: row.sizeBytes,
          storage: row.storage,
          uri: row.uri,
          task_id: row.taskId,
          run_id: row.runId,
          metadata: row.metadata,
        },
      },
    ],
    now,
  );
  return row;
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

/** The stored bytes of an artifact, or null when it was registered by URI. */
export async function storedContent(db: Executor, row: ArtifactRow): Promise<Buffer | null> {
  if (row.storage !== 'stored') return null;
  const [stored] = await db
    .select({ content: artifactContents.content })
    .from(artifactContents)
    .where(and(eq(artifactContents.workspaceId, row.workspaceId), eq(artifactContents.sha256, row.sha256)));
  return stored?.content ?? null;
}
