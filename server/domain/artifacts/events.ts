/**
 * The artifacts' slice of the event registry, their projection rules, and the one
 * `artifactRow(payload)` that makes a registered artifact's row on the write (artifacts.ts) and on
 * the replay. The events carry what an artifact is, its digest, size and media type, and where it
 * belongs; never its bytes.
 */
import { z } from 'zod';
import type { artifacts } from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { readBack, type PayloadOf } from '@/server/ledger/event-types';
import { metaOf, must, touch, type RowMeta, type RulesOf } from '../projection';

type ArtifactRow = typeof artifacts.$inferSelect;

/** An artifact registered (POST /artifacts). The API writes the digest `sha256:<hex>`; the table keeps the hex. */
const artifactRegistered = z.object({
  artifact_id: z.string(),
  artifact_type: z.string(),
  title: z.string(),
  media_type: z.string(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  size_bytes: z.number(),
  storage: z.enum(['stored', 'external']),
  uri: z.string().nullable(),
  task_id: z.string().nullable(),
  run_id: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
});

/** An artifact's stored bytes removed: by an owner (DELETE /artifacts/{id}/content) or the workspace's retention. */
const artifactContentRemoved = z.object({
  artifact_id: z.string(),
  digest: z.string(),
  reason: z.enum(['deleted', 'retention']),
  removed_at: z.string(),
});

export const artifactEvents = {
  'artifact.registered': readBack('artifact', artifactRegistered),
  'artifact.content_removed': readBack('artifact', artifactContentRemoved),
};

/** Who registered it: the event's actor. */
type RegisteredBy = Pick<LedgerEvent, 'actorType' | 'actorId'>;

/** A registered artifact's row, its bytes (if stored) still held. */
export const artifactRow = (p: PayloadOf<'artifact.registered'>, m: RowMeta, by: RegisteredBy): ArtifactRow => ({
  id: p.artifact_id,
  workspaceId: m.workspaceId,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
  artifactType: p.artifact_type,
  title: p.title,
  taskId: p.task_id,
  runId: p.run_id,
  mediaType: p.media_type,
  sha256: p.digest.slice('sha256:'.length),
  sizeBytes: p.size_bytes,
  storage: p.storage,
  uri: p.uri,
  metadata: p.metadata,
  createdByType: by.actorType,
  createdById: by.actorId,
  contentRemovedAt: null,
});

export const artifactRules: RulesOf<typeof artifactEvents> = {
  'artifact.registered': (state, event) => state.artifacts.set(event.aggregateId, artifactRow(event.payload, metaOf(event), event)),
  'artifact.content_removed': (state, event) =>
    touch(must(state.artifacts.get(event.aggregateId), event), { contentRemovedAt: new Date(event.payload.removed_at) }, event),
};
