/** Conditional GETs: whether an If-None-Match header names a representation's ETag (RFC 9110 §13.1.2). */

/** True when `ifNoneMatch` names `etag` (weakly: W/ is ignored, as for GET) or is `*`. */
export function noneMatchHits(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === etag);
}
