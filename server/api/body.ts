/** Reading a request body with a byte limit enforced while reading. */

/**
 * The body's bytes, or null when it is larger than `limit`: a declared Content-Length over it is
 * refused at once, and the count is kept while reading, so a lying or absent Content-Length (a
 * chunked body) cannot get past it.
 */
export async function readBounded(request: Request, limit: number): Promise<Buffer | null> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => undefined);
        return null;
      }
      chunks.push(value);
    }
  }
  return Buffer.concat(chunks);
}

/** UTF-8 text of `bytes`, or null when they are not valid UTF-8. */
export function utf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
