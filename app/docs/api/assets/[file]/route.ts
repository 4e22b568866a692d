/** The few Swagger UI files the API reference page loads, read from the swagger-ui-dist package. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

// Points Swagger UI at the live document; kept as a file so the page needs no inline script.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: false,
});
`;

export async function GET(_req: Request, ctx: { params: Promise<{ file: string }> }): Promise<Response> {
  const { file } = await ctx.params;
  if (file === 'init.js') {
    return new Response(INIT, { headers: { 'Content-Type': 'text/javascript; charset=utf-8' } });
  }
  const type = FILES[file];
  if (!type) return new Response('Not found', { status: 404 });
  const body = await readFile(path.join(process.cwd(), 'node_modules', 'swagger-ui-dist', file));
  return new Response(body, { headers: { 'Content-Type': type, 'Cache-Control': 'public, max-age=3600' } });
}
