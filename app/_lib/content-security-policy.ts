/**
 * The Content-Security-Policy of the human pages (proxy.ts, with a nonce per view) and of the API
 * reference (app/docs/api/route.ts, which runs only its own files). One list, so the two cannot
 * drift apart on what a page may load.
 */
export function contentSecurityPolicy(scriptSrc: string): string {
  return [
    "default-src 'self'",
    `script-src ${scriptSrc}`,
    // Inline style attributes cannot run code; React's style props and Swagger UI's need them.
    "style-src 'self' 'unsafe-inline'",
    // Swagger UI draws its icons as data: images.
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}
