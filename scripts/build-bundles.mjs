#!/usr/bin/env node
// Bundles the command line into two CommonJS files with esbuild (cli/bundle.cts says what each
// holds and how the executable picks one); `npm run build`, `npm test` and `npm pack` run this after tsc:
// - dist/cli/checkpoint-bundle.cjs: the cheap path (dist/cli/cheap-path.js) and the modules a plain
//   checkpoint or restore loads;
// - dist/cli/cli-bundle.cjs: the whole command line (dist/cli/main.js) with the session layer,
//   the backends and the model.
// Node 20 resolves, reads and links every ES module on its own: a checkpoint loaded about forty, a
// create about two hundred; in one file they cost less. CommonJS, because cli/pdb-env.cts require()s
// them before Node's ES module loader starts, and require() gives builtins without their ES module
// facades (docs/evidence.md quotes the receipts).
//
// - Static imports are bundled. A dynamic import is bundled when its module is one the bundle's
//   commands run (`inline` below); any other stays an import of the dist file, loaded only when
//   used. Those modules bring their own copy of what the bundle holds (model/errors.ts makes
//   `instanceof PdbError` hold across copies; commander is passed to a command module, never
//   imported by one; nothing else the copies share is per-module state).
// - `import.meta.url` in a bundled module still names that module's dist file (resolved against
//   the bundle's own URL, set in its first line), so a file found beside it (the native addon,
//   the fs worker) is found as before.
// - Both bundles carry one build id in their first line, and the last step writes it into
//   dist/cli/bundle.cjs: the executable runs a bundle only of that build (tsc writes the file
//   back with none, so after a bare tsc the modules run).
// - dist/cli/NAME-bundle.cache is the bundle's V8 code cache, made after a warm-up run of its
//   commands (scripts/warm-bundle-cache.mjs) for this build only.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, statSync, writeFileSync, renameSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const BUNDLE_URL = '__pdbBundleUrl';
// tsc has built it: the bundles' file names, first lines and the name of their import() are defined there.
const LOADER = join(dist, 'cli', 'bundle.cjs');
const { BUNDLE_IMPORT, bundleHead, bundleFiles } = createRequire(import.meta.url)(LOADER);
// The backends a checkpoint resumes: their rows in the backends' table say so.
const { checkpointInlineModules } = await import(pathToFileURL(join(dist, 'backends', 'table.js')).href);

const underDist = (file) => relative(dist, file).split(sep).join('/');

/** Dynamically imported modules a plain checkpoint or restore runs (paths under dist/); the build fails when one is not in the bundle. */
const CHECKPOINT_INLINE = new Set([
  'cli/commands/checkpoint.js',
  'sessions/service.js',
  'sessions/records/store-location.js',
  'sessions/lifecycle/checkpoint.js',
  // the daemon's runCheapFor turns on its remembered index checksums (the bundle's own copy).
  'model/scan/tree-index.js',
  // ... and its kept cuts of the documents it installs.
  'model/store/chunks.js',
  // ... and, with --watch, its watch of session roots.
  'model/scan/watch.js',
  // restore, the other cheap command: what it loads beyond a checkpoint.
  'cli/commands/history.js',
  'sessions/history/restore.js',
  // the daemon's turn hooks (cheap-path.ts runHookFor): a checkpoint before and after an agent's turn.
  'sessions/hooks/turn-hook.js',
  'sessions/hooks/claude-code.js',
  'sessions/hooks/dialects.js',
  ...checkpointInlineModules(),
]);

/**
 * The modules that stay modules in the cli bundle: the command modules that load the harness, the
 * workloads, the reports or the agents, which the session commands never need; the schema
 * validators (ajv, a third of the bundle otherwise), which only those and an AgentFS pin file
 * need; and bundle.cjs (doctor asks it which bundles run), which holds the build id the last step
 * writes, and whose text holds the bundles' first lines, which the rewrite of import() below would change.
 */
const CLI_MODULES = new Set([
  ...['agent', 'bench', 'hook', 'model', 'check-path', 'report', 'validate'].map((c) => `cli/commands/${c}.js`),
  'model/schemas.js',
  'cli/bundle.cjs',
]);

const BUNDLES = {
  checkpoint: { entry: 'cli/cheap-path.js', inline: (rel) => CHECKPOINT_INLINE.has(rel), mustInline: CHECKPOINT_INLINE },
  cli: {
    entry: 'cli/main.js',
    mustInline: new Set(),
    inline: (rel) => /^(cli|sessions|backends|model)\//.test(rel) && !CLI_MODULES.has(rel),
  },
};

/** Build one bundle of the build `id`, and (by a warm-up in a child process) its code cache. */
async function build(name, id) {
  const { entry, inline, mustInline } = BUNDLES[name];
  const files = bundleFiles(name);
  const out = join(dist, 'cli', files.file);
  const result = await esbuild.build({
    entryPoints: [join(dist, entry)],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    // The build's id (a code cache names the build it was made for) and its import() first
    // (cli/bundle.cts), then its own URL.
    banner: {
      js: [...bundleHead(id), `const ${BUNDLE_URL} = require('node:url').pathToFileURL(__filename).href;`].join('\n'),
    },
    target: 'node20',
    outfile: `${out}.tmp`,
    metafile: true,
    absWorkingDir: root,
    logLevel: 'error',
    plugins: [
      {
        name: `pdb-env-${name}`,
        setup(b) {
          // commander requires child_process (and with it net) when it loads, for a command run
          // as a separate executable, which pdb-env has none of: ~7 ms of every command line
          // (measured on a create). It gets child_process on first use instead.
          b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
            args.importer.includes(`${sep}node_modules${sep}commander${sep}`) ? { path: 'child_process', namespace: 'pdb-lazy' } : null,
          );
          b.onLoad({ filter: /.*/, namespace: 'pdb-lazy' }, () => ({
            contents: "let m; module.exports = new Proxy({}, { get: (_, k) => (m ??= require('node:child_process'))[k] });",
            loader: 'js',
          }));
          // A package imported dynamically (execa, where a process starts) stays a package.
          b.onResolve({ filter: /^[^./]/ }, (args) =>
            args.kind === 'dynamic-import' && !args.path.startsWith('node:') ? { path: args.path, external: true } : null,
          );
          b.onResolve({ filter: /^\.\.?\// }, (args) => {
            if (args.kind !== 'dynamic-import') return null;
            const file = resolve(args.resolveDir, args.path);
            if (inline(underDist(file))) return null;
            return { path: `./${relative(dirname(out), file).split(sep).join('/')}`, external: true };
          });
          b.onLoad({ filter: /\.js$/ }, (args) => {
            const text = readFileSync(args.path, 'utf8');
            if (!text.includes('import.meta.url')) return { contents: text, loader: 'js' };
            const own = `new URL(${JSON.stringify(relative(dirname(out), args.path).split(sep).join('/'))}, ${BUNDLE_URL}).href`;
            return { contents: text.replaceAll('import.meta.url', own), loader: 'js' };
          });
        },
      },
    ],
  });

  // Every dynamic import becomes a call of BUNDLE_IMPORT, but the one in the bundle's first two
  // lines. Each is of a string literal (resolved from dist/cli, as the bundle's own would be), or of
  // an absolute file URL: the one computed specifier, a user's backend module (backends/module.ts).
  const text = readFileSync(`${out}.tmp`, 'utf8');
  const rest = text.indexOf('\n', text.indexOf('\n') + 1) + 1;
  const body = text.slice(rest).replace(/(?<![\w$.])import\(/g, `${BUNDLE_IMPORT}(`);
  const computed = body.match(new RegExp(`${BUNDLE_IMPORT}\\((?!")[^\n]*`, 'g')) ?? [];
  if (/(?<![\w$.])import\(/.test(body) || computed.some((call) => !call.includes('pathToFileURL')))
    throw new Error(`${name} bundle: a dynamic import left unrouted (${computed.join('; ')})`);
  writeFileSync(`${out}.tmp`, text.slice(0, rest) + body);
  renameSync(`${out}.tmp`, out);
  const sources = Object.keys(result.metafile.inputs)
    .filter((f) => !f.startsWith('pdb-lazy:')) // the shim above is no file
    .map((f) => underDist(resolve(root, f)));
  const missing = [...mustInline].filter((rel) => !sources.includes(rel));
  if (missing.length) throw new Error(`${name} bundle: ${missing.join(', ')} not in it (moved? scripts/build-bundles.mjs lists it)`);
  console.log(`pdb-env: ${name} bundle built from ${sources.length} modules (${statSync(out).size} bytes)`);

  // Its code cache, made by a warm-up in a child process (scripts/warm-bundle-cache.mjs). Without
  // one, the bundle is compiled in each process, as it was before.
  const cache = join(dist, 'cli', files.cache);
  rmSync(cache, { force: true });
  const warm = spawnSync(process.execPath, [join(root, 'scripts', 'warm-bundle-cache.mjs'), name], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (warm.status === 0) console.log(`pdb-env: ${name} bundle code cache made (${statSync(cache).size} bytes)`);
  else
    console.log(
      `pdb-env: no code cache for the ${name} bundle (${(warm.stderr || String(warm.error ?? warm.signal)).trim().split('\n').pop()})`,
    );
}

/** Write the build id into dist/cli/bundle.cjs (null: no bundle of this dist runs until the build ends). */
function stamp(id) {
  const text = readFileSync(LOADER, 'utf8');
  const line = /^const BUILD_ID = (null|"[0-9a-f]{32}");$/m;
  if (!line.test(text)) throw new Error(`${LOADER}: no line 'const BUILD_ID = null;' to write the build id into`);
  writeFileSync(`${LOADER}.tmp`, text.replace(line, `const BUILD_ID = ${id === null ? 'null' : JSON.stringify(id)};`));
  renameSync(`${LOADER}.tmp`, LOADER);
}

const id = randomBytes(16).toString('hex');
stamp(null);
// Left by builds before the id: each listed the files its bundle was made from.
for (const name of Object.keys(BUNDLES)) rmSync(join(dist, 'cli', `${name}-bundle.json`), { force: true });
for (const name of Object.keys(BUNDLES)) await build(name, id);
stamp(id);
console.log(`pdb-env: dist/cli/bundle.cjs runs the bundles of build ${id.slice(0, 8)}`);
