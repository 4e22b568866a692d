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
  <style>
    /* At a phone's width (390 px) nothing may scroll the page sideways: the header's links wrap,
       long paths and names break, and what cannot break (code, tables, models) scrolls in its own box. */
    body { margin: 0; }
    .top { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center; padding: 0.75rem 1.25rem;
      border-bottom: 1px solid #d0d7de; font-family: system-ui, sans-serif; }
    .top a { color: #1f4e79; }
    .top .home { font-weight: 600; text-decoration: none; }
    .top .doc { margin-left: auto; }
    @media (max-width: 600px) {
      .top .doc { margin-left: 0; }
      .swagger-ui .wrapper { padding: 0 10px; box-sizing: border-box; }
      .swagger-ui .info .title, .swagger-ui .info p, .swagger-ui .info a { overflow-wrap: anywhere; }
      .swagger-ui .scheme-container .schemes { flex-wrap: wrap; }
      .swagger-ui .opblock-tag { flex-wrap: wrap; }
      .swagger-ui .opblock .opblock-summary { flex-wrap: wrap; }
      .swagger-ui .opblock .opblock-summary-path, .swagger-ui .opblock .opblock-summary-description {
        overflow-wrap: anywhere; word-break: break-all; flex-shrink: 1; min-width: 0; max-width: 100%; }
      .swagger-ui .opblock-body pre, .swagger-ui .highlight-code, .swagger-ui .model-box,
      .swagger-ui .responses-inner, .swagger-ui .parameters-container, .swagger-ui .table-container {
        max-width: 100%; overflow-x: auto; box-sizing: border-box; }
      .swagger-ui table { display: block; max-width: 100%; overflow-x: auto; }
    }
  </style>
</head>
<body>
  <header class="top">
    <a class="home" href="/">← Accountable Work Service</a>
    <a href="/decisions">Decisions</a>
    <a href="/initiatives">Initiatives</a>
    <a class="doc" href="/api/v1/openapi.json">openapi.json</a>
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
