// Our TypeScript as plain JavaScript for node, without a loader in the process: esbuild bundles an
// entry and our modules it imports (packages stay in node_modules) into node_modules/.cache/aws-tools,
// where node resolves those packages. A TypeScript loader registered in the process (tsx) costs
// ~35 MiB of memory and compiles every module as it loads. Bundling takes tens of milliseconds for
// a tool and ~0.4 s for the whole server, so a bundle is made on every start and is never older
// than its sources. scripts/tool.mjs runs the command-line tools this way; scripts/serve.mjs the API.
import { rename, readFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, stop } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const cache = path.join(root, 'node_modules', '.cache', 'aws-tools');

// A bundle has one import.meta, the bundle's: each of our modules is given its own location back
// (verify-parallel.ts finds its worker's source by it, db/ its migrations).
const ownLocations = {
  name: 'own-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const source = await readFile(args.path, 'utf8');
      const contents = source
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path));
      return { contents, loader: 'ts' };
    });
  },
};

/**
 * Bundles `entry` (a path from the repository's root) as `<name>.mjs` and returns its file URL,
 * for import().
 */
export async function bundle(entry, name) {
  const out = path.join(cache, `${name}.mjs`);
  await mkdir(cache, { recursive: true });
  // Written beside and renamed into place: two processes started at once never run a half-written file.
  const partial = `${out}.${process.pid}`;
  await build({
    entryPoints: [path.join(root, entry)],
    outfile: partial,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    tsconfig: path.join(root, 'tsconfig.json'),
    plugins: [ownLocations],
    logLevel: 'error',
  });
  await rename(partial, out);
  // esbuild's service process is not needed after: the server would keep it for its whole life.
  await stop();
  return pathToFileURL(out).href;
}
