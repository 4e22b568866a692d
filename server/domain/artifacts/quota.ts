/**
 * The workspace's quota of stored artifact content (ARTIFACT_QUOTA_BYTES): the bytes it holds in
 * `artifact_contents`, counted in its `artifact_usage` row by the same transactions that store and
 * remove them. Bytes already stored (the same digest again) cost nothing; external artifacts (by
 * URI) are never stored and never count.
 *
 * Race-free by the row's lock: the charge is one statement that adds the size only while the sum
 * stays within the limit, so a second registration arriving at once waits for the first to commit
 * and is then measured against what the first left (PostgreSQL re-reads a row it waited for).
 */
import { eq, sql } from 'drizzle-orm';
import { query, type Executor, type Tx } from '@/db';
import { artifactUsage } from '@/db/schema';
import { AppError } from '@/server/errors';

/** The bytes the workspace holds (0 before it stored any). */
export async function storedBytes(db: Executor, workspaceId: string): Promise<number> {
  const [row] = await db.select({ bytes: artifactUsage.storedBytes }).from(artifactUsage).where(eq(artifactUsage.workspaceId, workspaceId));
  return Number(row?.bytes ?? 0);
}

/**
 * Counts `sizeBytes` new stored bytes against the workspace's quota, or refuses them: 403
 * quota_exceeded with the figures (the caller's transaction then writes nothing).
 */
export async function chargeStoredBytes(tx: Tx, workspaceId: string, sizeBytes: number, limitBytes: number): Promise<void> {
  const refuse = (usedBytes: number) =>
    new AppError(
      'quota_exceeded',
      `Storing these ${sizeBytes} bytes would take the workspace past its quota of stored artifact content: ` +
        `${usedBytes} of ${limitBytes} bytes are used. Remove stored content it no longer needs, or register the artifact by uri.`,
      { used_bytes: usedBytes, limit_bytes: limitBytes, size_bytes: sizeBytes },
    );
  if (sizeBytes > limitBytes) throw refuse(await storedBytes(tx, workspaceId));
  const [row] = await query<{ stored_bytes: string | number }>(
    tx,
    sql`insert into artifact_usage (workspace_id, stored_bytes) values (${workspaceId}, ${sizeBytes})
        on conflict (workspace_id) do update set stored_bytes = artifact_usage.stored_bytes + excluded.stored_bytes
         where artifact_usage.stored_bytes + excluded.stored_bytes <= ${limitBytes}
        returning stored_bytes`,
  );
  if (!row) throw refuse(await storedBytes(tx, workspaceId));
}

/** Stored bytes removed (an owner's DELETE, or retention): no longer counted. */
export async function releaseStoredBytes(tx: Tx, workspaceId: string, bytes: number): Promise<void> {
  if (bytes <= 0) return;
  await tx
    .update(artifactUsage)
    .set({ storedBytes: sql`greatest(0, ${artifactUsage.storedBytes} - ${bytes})` })
    .where(eq(artifactUsage.workspaceId, workspaceId));
}

/** For the metrics: the bytes all workspaces hold together, and the most one of them holds. */
export async function storedBytesTotals(db: Executor): Promise<{ total: number; largest: number }> {
  const [row] = await query<{ total: string | number | null; largest: string | number | null }>(
    db,
    sql`select sum(stored_bytes) as total, max(stored_bytes) as largest from artifact_usage`,
  );
  return { total: Number(row?.total ?? 0), largest: Number(row?.largest ?? 0) };
}
