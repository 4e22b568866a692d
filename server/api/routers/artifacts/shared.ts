/** The schemas the artifact procedures share, and an artifact as the API shows it. */
import { z } from 'zod';
import { artifacts, artifactStorages } from '@/db/schema';
import { AppError } from '@/server/errors';
import { resourceProcedure } from '../../procedures';
import { id, jsonObject, timestamp } from '../../schemas';

export const artifactSchema = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    artifact_type: z.string().meta({ description: 'A type_code of the catalog (GET /artifact-types).' }),
    title: z.string(),
    task_id: z.uuid().nullable(),
    run_id: z.uuid().nullable(),
    media_type: z.string(),
    digest: z.string().meta({
      description: '`sha256:` and the SHA-256 of the bytes in lower-case hex: `sha256sum` of a downloaded copy must print the same hex.',
      example: 'sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae',
    }),
    size_bytes: z.int().min(0),
    storage: z.enum(artifactStorages).meta({
      description:
        '`stored`: the service holds the bytes (GET content_url). `external`: they are at `uri`, registered as the agent claimed them; the service never fetched them.',
    }),
    uri: z.string().nullable(),
    content_url: z
      .string()
      .nullable()
      .meta({ description: 'Where the stored bytes are served (GET), null for an external artifact and once they were removed.' }),
    content_removed_at: timestamp()
      .nullable()
      .meta({ description: 'When the stored bytes were removed (DELETE …/content or the workspace’s retention); the digest stays.' }),
    metadata: jsonObject().nullable(),
    created_by: z.object({ type: z.string(), id: z.string() }),
    created_at: timestamp(),
  })
  .meta({ id: 'Artifact' });

export const artifactPath = z.strictObject({ id: id() });

export const noSuchArtifact = () => new AppError('not_found', 'No such artifact in your workspace.');

/** Acting on the artifact the path names: 404 for anyone outside its workspace. */
export const artifactProcedure = () => resourceProcedure(artifacts, 'id', noSuchArtifact);
