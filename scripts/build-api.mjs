// Bundles server/http/node-api.ts (the /api/v1 handler scripts/serve.mjs calls without Next.js in
// front) into .next/api/node-api.mjs. Runs after `next build` (npm run build). Dependencies stay
// in node_modules (packages: external); the '@/…' paths come from tsconfig.json.
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
await build({
  entryPoints: [path.join(root, 'server', 'http', 'node-api.ts')],
  outfile: path.join(root, '.next', 'api', 'node-api.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
  tsconfig: path.join(root, 'tsconfig.json'),
});
