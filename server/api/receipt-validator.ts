/**
 * POST /api/v1/agent-work-receipts/validate: the public validation endpoint. No credential, stores
 * nothing. It reads the body itself (outside the JSON adapter) so the byte limit is counted while
 * reading (a lying or absent Content-Length, or a chunked body, cannot get past it) and so
 * duplicate keys are still visible to the strict reader. Errors use the validator's own shape:
 * { ok: false, valid: false, error: { code, message, issues } }.
 */
import { LIMITS, validateReceiptText, type Issue } from '@/server/domain/receipts/validate';

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json; charset=utf-8' } });
}

export function validatorError(status: number, code: string, message: string, issues: Issue[] = []): Response {
  return json(status, { ok: false, valid: false, error: { code, message, issues } });
}

export async function serveReceiptValidation(request: Request): Promise<Response> {
  const limit = LIMITS.max_bytes;
  const tooLarge = () => validatorError(413, 'input.too_large', `The document is larger than ${limit} bytes.`);
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) return tooLarge();
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
        return tooLarge();
      }
      chunks.push(value);
    }
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    return validatorError(400, 'input.invalid_json', 'The document is not valid UTF-8.');
  }
  const outcome = validateReceiptText(text);
  if (outcome.ok) return json(200, { ok: true, valid: outcome.valid, issues: outcome.issues });
  return validatorError(outcome.code === 'input.structure_limit' ? 422 : 400, outcome.code, outcome.message, outcome.issues);
}
