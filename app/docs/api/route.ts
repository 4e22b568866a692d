/**
 * The rendered API reference: Swagger UI (from swagger-ui-dist, served locally so the page works
 * offline) over the live document at /api/v1/openapi.json.
 */
import { contentSecurityPolicy } from '@/app/_lib/content-security-policy';

export const dynamic = 'force-static';

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>API reference · Accountable Work Service</title>
  <link rel="icon" href="/favicon.ico" sizes="32x32">
  <link rel="icon" href="/icon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/docs/api/assets/swagger-ui.css">
</head>
<body>
  <header style="display:flex;gap:1rem;align-items:center;padding:0.75rem 1.25rem;border-bottom:1px solid #d0d7de;font-family:system-ui,sans-serif">
    <a href="/" style="font-weight:600;color:#1f4e79;text-decoration:none">← Accountable Work Service</a>
    <a href="/decisions" style="color:#1f4e79">Decisions</a>
    <a href="/initiatives" style="color:#1f4e79">Initiatives</a>
    <a href="/api/v1/openapi.json" style="color:#1f4e79;margin-left:auto">openapi.json</a>
  </header>
  <div id="swagger-ui"></div>
  <script src="/docs/api/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/api/assets/init.js"></script>
</body>
</html>`;

// Swagger UI runs only its own files (no inline script: init.js is a file for that reason).
const policy = contentSecurityPolicy("'self'");

export function GET(): Response {
  return new Response(page, { headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': policy } });
}
