/** GET /artifacts/{id}/content: the stored bytes of an artifact. */
import { z } from 'zod';
import { findArtifact, storedContent } from '@/server/domain/artifacts/artifacts';
import { AppError } from '@/server/errors';
import { noneMatchHits } from '../../conditional';
import { artifactPath, artifactProcedure, noSuchArtifact } from './shared';

/**
 * Media types a browser shows as they are without running anything: answered inline (the decision
 * page shows them). Everything else, HTML, SVG and XML first, is an attachment: downloaded, never
 * rendered as a page of the app's origin (and the answer's CSP sandboxes it if it were).
 */
const INLINE = new Set([
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
]);

/** A file name for the download: the title's safe characters, as RFC 6266 filename* too. */
function disposition(kind: 'inline' | 'attachment', title: string): string {
  const ascii = title.replace(/[^A-Za-z0-9._ -]/g, '_').slice(0, 100) || 'artifact';
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(title.slice(0, 100))}`;
}

export const contentProcedure = artifactProcedure()
  .meta({
    openapi: {
      method: 'GET',
      path: '/artifacts/{id}/content',
      tags: ['artifacts'],
      summary: 'Download an artifact’s stored bytes',
      description:
        'The bytes as registered, with `Content-Type` as registered and `ETag` the digest (`"sha256:<hex>"`; If-None-Match ' +
        'answers 304). Plain text, Markdown, CSV, JSON and PNG, JPEG, GIF and WebP images come `inline`; every other type ' +
        '(HTML, SVG and XML among them) as an `attachment`, and every answer carries `Content-Security-Policy: sandbox`, so ' +
        'registered content never runs as a page of this origin. 404 for an artifact registered by `uri` (its bytes are ' +
        'there, never fetched here) and for another workspace’s.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found'],
    rawContent: 'The artifact’s bytes, of its registered media type.',
    otherSuccess: { 304: 'Not modified: the digest in If-None-Match is current.' },
    successHeaders: {
      ETag: 'The digest of the bytes: "sha256:<hex>".',
      'Content-Disposition': '`inline` for the types shown as they are, `attachment` for every other.',
    },
  })
  .input(artifactPath)
  .output(z.null())
  .query(async ({ ctx, input, actor }) => {
    const { db } = ctx.runtime;
    const row = await findArtifact(db, actor.workspaceId, input.id);
    if (!row) throw noSuchArtifact();
    const content = await storedContent(db, row);
    if (!content) {
      throw new AppError(
        'not_found',
        row.storage === 'external'
          ? `This artifact's bytes are not stored here: they are at its uri (digest sha256:${row.sha256}).`
          : 'This artifact’s stored bytes were removed; its digest stays in the ledger.',
      );
    }
    const etag = `"sha256:${row.sha256}"`;
    ctx.res.headers.ETag = etag;
    const essence = row.mediaType.split(';', 1)[0]!.trim();
    ctx.res.headers['Content-Disposition'] = disposition(INLINE.has(essence) ? 'inline' : 'attachment', row.title);
    // A digest names its bytes for ever: a cache may keep them (private: they are the workspace's).
    ctx.res.headers['Cache-Control'] = 'private, max-age=31536000, immutable';
    if (noneMatchHits(ctx.headers.get('if-none-match'), etag)) {
      ctx.res.status = 304;
      return null;
    }
    ctx.res.raw = { body: content, contentType: row.mediaType };
    return null;
  });
