/** POST /artifacts: Register an artifact. */
import { z } from 'zod';
import { readCatalog } from '@/server/domain/artifact-types/catalog';
import { MAX_STORED_BYTES } from '@/db/schema';
import { registerArtifact, URI_SCHEMES } from '@/server/domain/artifacts/artifacts';
import { ownerProcedure } from '../../procedures';
import { id, jsonObject, mutationHeaders, text } from '../../schemas';
import { artifactSchema } from './shared';
import { artifactView } from '@/server/domain/artifacts/view';

/** Base64 of MAX_STORED_BYTES, and room for the other members: the body POST /artifacts reads. */
const BASE64_MAX = Math.ceil(MAX_STORED_BYTES / 3) * 4;
const BODY_LIMIT = BASE64_MAX + 256 * 1024;

/** type/subtype (RFC 6838 §4.2) and parameters, lower-cased but for the parameters' values. */
const MEDIA_TYPE =
  /^([a-z0-9][a-z0-9!#$&^_.+-]{0,126})\/([a-z0-9][a-z0-9!#$&^_.+-]{0,126})((?:\s*;\s*[a-z0-9!#$&^_.+-]+=(?:[a-z0-9!#$&^_.+-]+|"[^"\\\r\n]*"))*)$/i;
const mediaType = () =>
  z
    .string()
    .max(255)
    .regex(MEDIA_TYPE, 'must be a media type: type/subtype, with optional ;name=value parameters')
    .transform((v) => {
      const [, type, subtype, params] = MEDIA_TYPE.exec(v)!;
      return `${type!.toLowerCase()}/${subtype!.toLowerCase()}${params ?? ''}`;
    })
    .meta({ example: 'text/markdown; charset=utf-8' });

const uri = () =>
  z
    .string()
    .max(2048)
    .check((c) => {
      let url: URL;
      try {
        url = new URL(c.value);
      } catch {
        c.issues.push({ code: 'custom', input: c.value, message: 'must be an absolute URI' });
        return;
      }
      const scheme = url.protocol.slice(0, -1);
      if (!(URI_SCHEMES as readonly string[]).includes(scheme))
        c.issues.push({ code: 'custom', input: c.value, message: `scheme must be one of ${URI_SCHEMES.join(', ')}` });
      else if (url.username || url.password)
        c.issues.push({ code: 'custom', input: c.value, message: 'must not carry credentials (user:password@)' });
    })
    .meta({ format: 'uri', example: 'https://data.example.com/exports/2026-11.parquet' });

const registerResponse = z.object({ ok: z.literal(true), data: artifactSchema }).meta({ id: 'ArtifactResponse' });

export const registerProcedure = ownerProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/artifacts',
      tags: ['artifacts'],
      summary: 'Register an artifact',
      description:
        'Records what an agent delivered, with the SHA-256 of its bytes, optionally linked to a task and a run (a run alone ' +
        'links its task too). Either `content`: the bytes in standard base64, at most 1 MiB decoded, stored here once per ' +
        'workspace and digest however often they are registered (a `sha256` or `size_bytes` given with them must match); or ' +
        '`uri` (https, http, s3 or gs, no credentials) with the `sha256` and `size_bytes` of the bytes there: recorded as ' +
        'claimed, never fetched. `artifact_type` must be a type_code of the catalog (GET /artifact-types). The event ' +
        '`artifact.registered` carries the type, digest, size, media type and links, never the bytes. A task or run of ' +
        'another workspace is 404; a run whose lease lapsed is 409 lease_expired. Content over 1 MiB decoded, or a body ' +
        `over ${BODY_LIMIT} bytes, is 413. New stored content that would take the workspace past its quota ` +
        '(ARTIFACT_QUOTA_BYTES, default 1 GiB; the same bytes again cost nothing) is 403 quota_exceeded with the used, limit ' +
        `and size figures, and writes nothing. With an Idempotency-Key the same key and body replay the original response (200).`,
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original response.' },
    bodyLimitBytes: BODY_LIMIT,
    errorCodes: [
      'not_found',
      'forbidden',
      'quota_exceeded',
      'lease_expired',
      'invalid_idempotency_key',
      'idempotency_conflict',
      'idempotency_in_progress',
    ],
  })
  .input(
    z.strictObject({
      workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace).' }),
      artifact_type: text(1, 100),
      title: text(1, 200),
      task_id: id().optional(),
      run_id: id().optional(),
      media_type: mediaType(),
      // Its size is checked decoded, as 413 (the body's limit bounds the text).
      content: z.string().optional().meta({ description: 'The bytes, standard base64 (RFC 4648 §4, padded), at most 1 MiB decoded.' }),
      uri: uri().optional(),
      sha256: z
        .string()
        .regex(/^(sha256:)?[0-9a-fA-F]{64}$/, 'must be 64 hex digits, optionally after sha256:')
        .optional()
        .meta({ description: 'The SHA-256 of the bytes: required with `uri`; checked against `content`.' }),
      size_bytes: z
        .int()
        .min(0)
        .max(Number.MAX_SAFE_INTEGER)
        .optional()
        .meta({ description: 'Required with `uri`; checked against `content`.' }),
      metadata: jsonObject({ maxBytes: 16 * 1024 })
        .optional()
        .meta({ description: 'Yours, at most 16 KiB; kept in the event.' }),
    }),
  )
  .output(registerResponse)
  .mutation(async ({ ctx, input, actor, write }) => {
    const { workspace_id: _w, ...body } = input;
    const catalog = await readCatalog(ctx.runtime.db);
    return write(
      async (tx) => ({
        ok: true as const,
        data: artifactView(await registerArtifact(tx, actor, body, catalog.types, ctx.runtime.env.ARTIFACT_QUOTA_BYTES)),
      }),
      {
        replay: (b) => b,
      },
    );
  });
