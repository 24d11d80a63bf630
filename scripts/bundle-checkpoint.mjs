#!/usr/bin/env node
// Bundles the checkpoint fast path (dist/cli/fast-path.js) and the modules a plain checkpoint
// loads into one CommonJS file, dist/cli/checkpoint-bundle.cjs, with esbuild; `npm run build` and
// `npm test` run it after tsc. Node 20 resolves, reads and links every ES module on its own, and a
// checkpoint loaded about forty: in one file they cost less. CommonJS, because cli/start.cts
// require()s it before Node's ES module loader starts, and require() gives builtins without their
// ES module facades (docs/evidence.md quotes the receipts); bin.js imports the same file.
//
// - Static imports are bundled. A dynamic import is bundled when its module is one a checkpoint
//   runs (INLINE below); any other stays an import of the dist file, loaded only when used. Those
//   modules bring their own copy of what the bundle holds (model/errors.ts makes `instanceof
//   PdbError` hold across copies; nothing else a checkpoint shares is per-module state).
// - `import.meta.url` in a bundled module still names that module's dist file (resolved against
//   the bundle's own URL, set in its first line), so a file found beside it (the native addon,
//   the fs worker) is found as before.
// - dist/cli/checkpoint-bundle.json lists every dist file the bundle was made from with its size
//   and mtime; bin.js runs the bundle only while they all match (cli/fast-entry.ts).
// - dist/cli/checkpoint-bundle.cache is the bundle's V8 code cache, made after a warm-up
//   checkpoint (scripts/warm-checkpoint-cache.mjs) for this build only (cli/bundle-state.cts).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, statSync, writeFileSync, renameSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const out = join(dist, 'cli', 'checkpoint-bundle.cjs');
const BUNDLE_URL = '__pdbBundleUrl';
// tsc has built it: the bundle's first lines and the name of its import() are defined there.
const { BUNDLE_IMPORT, bundleHead } = createRequire(import.meta.url)(join(dist, 'cli', 'bundle-state.cjs'));
const manifest = join(dist, 'cli', 'checkpoint-bundle.json');

/** Dynamically imported modules a plain checkpoint runs (paths under dist/). */
const INLINE = new Set([
  'sessions/service.js',
  'sessions/store-location.js',
  'sessions/checkpoint.js',
  'sessions/runtime/proc.js',
  'backends/full-copy.js',
  'backends/overlay.js',
  'backends/reflink.js',
  'backends/btrfs-snapshot.js',
]);

const underDist = (file) => relative(dist, file).split(sep).join('/');

const result = await esbuild.build({
  entryPoints: [join(dist, 'cli', 'fast-path.js')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  // The build's id (a code cache names the build it was made for) and its import() first
  // (cli/bundle-state.cts), then its own URL.
  banner: {
    js: [...bundleHead(randomBytes(16).toString('hex')), `const ${BUNDLE_URL} = require('node:url').pathToFileURL(__filename).href;`].join(
      '\n',
    ),
  },
  target: 'node20',
  outfile: `${out}.tmp`,
  metafile: true,
  absWorkingDir: root,
  logLevel: 'error',
  plugins: [
    {
      name: 'pdb-env-checkpoint',
      setup(build) {
        build.onResolve({ filter: /^\.\.?\// }, (args) => {
          if (args.kind !== 'dynamic-import') return null;
          const file = resolve(args.resolveDir, args.path);
          if (INLINE.has(underDist(file))) return null;
          return { path: `./${relative(dirname(out), file).split(sep).join('/')}`, external: true };
        });
        build.onLoad({ filter: /\.js$/ }, (args) => {
          const text = readFileSync(args.path, 'utf8');
          if (!text.includes('import.meta.url')) return { contents: text, loader: 'js' };
          const own = `new URL(${JSON.stringify(relative(dirname(out), args.path).split(sep).join('/'))}, ${BUNDLE_URL}).href`;
          return { contents: text.replaceAll('import.meta.url', own), loader: 'js' };
        });
      },
    },
  ],
});

// Every dynamic import (each of a string literal) becomes a call of BUNDLE_IMPORT, but the one in
// the bundle's first two lines.
const text = readFileSync(`${out}.tmp`, 'utf8');
const rest = text.indexOf('\n', text.indexOf('\n') + 1) + 1;
const body = text.slice(rest).replace(/(?<![\w$.])import\(/g, `${BUNDLE_IMPORT}(`);
if (/(?<![\w$.])import\(/.test(body) || new RegExp(`${BUNDLE_IMPORT}\\((?!")`).test(body))
  throw new Error('checkpoint bundle: a dynamic import left unrouted');
writeFileSync(`${out}.tmp`, text.slice(0, rest) + body);
renameSync(`${out}.tmp`, out);
const files = [...Object.keys(result.metafile.inputs).map((f) => resolve(root, f)), out];
const inputs = files.map((f) => {
  const st = statSync(f);
  return [underDist(f), st.size, st.mtimeMs];
});
writeFileSync(`${manifest}.tmp`, `${JSON.stringify({ inputs })}\n`);
renameSync(`${manifest}.tmp`, manifest);
console.log(`pdb-env: checkpoint bundle built from ${inputs.length - 1} modules (${statSync(out).size} bytes)`);

// Its code cache, made by a warm-up checkpoint in a child process (scripts/warm-checkpoint-cache.mjs).
// Without one, checkpoints compile the bundle in each process, as they did before.
const cache = join(dist, 'cli', 'checkpoint-bundle.cache');
rmSync(cache, { force: true });
const warm = spawnSync(process.execPath, [join(root, 'scripts', 'warm-checkpoint-cache.mjs')], {
  stdio: ['ignore', 'ignore', 'pipe'],
  encoding: 'utf8',
  timeout: 120_000,
});
if (warm.status === 0) console.log(`pdb-env: checkpoint bundle code cache made (${statSync(cache).size} bytes)`);
else
  console.log(
    `pdb-env: no code cache for the checkpoint bundle (${(warm.stderr || String(warm.error ?? warm.signal)).trim().split('\n').pop()})`,
  );
