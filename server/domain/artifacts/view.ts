/** An artifact as the API and the pages show it: its row with the digest written `sha256:<hex>`. */
import type { ArtifactRow } from './artifacts';

// A type, not an interface: the decision.created payload holds these, read back as records (../decisions/decision-payloads.ts).
export type ArtifactView = {
  id: string;
  workspace_id: string;
  artifact_type: string;
  title: string;
  task_id: string | null;
  run_id: string | null;
  media_type: string;
  digest: string;
  size_bytes: number;
  storage: ArtifactRow['storage'];
  uri: string | null;
  /** Where the stored bytes are served; null for an external artifact, and once they were removed. */
  content_url: string | null;
  /** When the stored bytes were removed (the digest stays); null while they are kept. */
  content_removed_at: string | null;
  metadata: Record<string, unknown> | null;
  created_by: { type: string; id: string };
  created_at: string;
};

export function artifactView(row: ArtifactRow): ArtifactView {
  return {
    id: row.id,
    workspace_id: row.workspaceId,
    artifact_type: row.artifactType,
    title: row.title,
    task_id: row.taskId,
    run_id: row.runId,
    media_type: row.mediaType,
    digest: `sha256:${row.sha256}`,
    size_bytes: row.sizeBytes,
    storage: row.storage,
    uri: row.uri,
    content_url: row.storage === 'stored' && !row.contentRemovedAt ? `/api/v1/artifacts/${row.id}/content` : null,
    content_removed_at: row.contentRemovedAt?.toISOString() ?? null,
    metadata: row.metadata ?? null,
    created_by: { type: row.createdByType, id: row.createdById },
    created_at: row.createdAt.toISOString(),
  };
}
