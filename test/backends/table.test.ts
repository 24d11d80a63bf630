// The backends table is the one list of backends: every row loads its own module and agrees with
// the backend object it loads, loading one backend loads no other, and the schemas' enums are its
// names, so a backend added to the table and its own file is caught wherever else it is missing.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  BACKENDS,
  BACKEND_NAMES,
  TEST_BACKEND_NAMES,
  backendRow,
  backendsWith,
  checkpointInlineModules,
  hookOrder,
  type BuiltinBackendName,
} from '../../backends/table.js';
import { REPO_ROOT } from '../helpers/index.js';

const ALL = Object.keys(BACKENDS) as BuiltinBackendName[];
const DIST = join(REPO_ROOT, 'dist');

test('each row loads its own module, whose backend says the same name, experimental and testOnly', async () => {
  for (const name of ALL) {
    const row = BACKENDS[name];
    const backend = await row.load();
    const file = join(DIST, 'backends', row.module);
    assert.ok(existsSync(file), `${name}: ${row.module} is not in dist/backends`);
    const exported = Object.values((await import(pathToFileURL(file).href)) as Record<string, unknown>);
    assert.ok(exported.includes(backend), `${name}: ${row.module} does not export the backend its load returns`);
    assert.is(backend.name, name);
    assert.is(backend.experimental, row.traits.experimental, `${name}: experimental`);
    assert.is(backend.testOnly, row.traits.testOnly, `${name}: testOnly`);
    // A clone family that claims no shared extents would get a fallback rate it can never pass.
    if (row.traits.cloneFamily) assert.ok(backend.capabilities.sharesExtents, `${name}: clone family without sharesExtents`);
  }
});

test('the names come from the table: users get every row but the test-only ones, in its order', () => {
  assert.equal([...BACKEND_NAMES, ...TEST_BACKEND_NAMES].sort(), [...ALL].sort());
  assert.equal(BACKEND_NAMES.slice(0, 2), ['full-copy', 'reflink']);
  assert.equal(TEST_BACKEND_NAMES, ['hardlink-farm']);
  assert.is(backendRow('full-copy'), BACKENDS['full-copy']);
  for (const other of ['zfs-clone', 'toString', '__proto__', '']) assert.is(backendRow(other), undefined, other);
});

test('the traits: the hook picks no experimental or test-only backend; the checkpoint bundle inlines built files', () => {
  assert.equal(hookOrder(), ['btrfs-snapshot', 'reflink', 'full-copy']);
  for (const name of hookOrder()) assert.not.ok(BACKENDS[name].traits.experimental || BACKENDS[name].traits.testOnly, name);
  assert.equal(backendsWith('cloneFamily'), ['reflink', 'btrfs-snapshot', 'apfs-clone']);
  assert.equal(backendsWith('probeCacheable'), ['reflink', 'btrfs-snapshot', 'overlay', 'apfs-clone']);
  assert.equal(checkpointInlineModules(), [
    'backends/full-copy.js',
    'backends/reflink.js',
    'backends/btrfs-snapshot.js',
    'backends/overlay.js',
  ]);
  for (const file of checkpointInlineModules()) assert.ok(existsSync(join(DIST, file)), file);
});

test('the schemas enumerate exactly the table: the plan every built-in backend, the policy the users ones', () => {
  const read = (name: string) => JSON.parse(readFileSync(join(REPO_ROOT, 'schemas', name), 'utf8'));
  const plan = read('plan.schema.json');
  assert.equal(plan.properties.backends.items.anyOf[0].enum, ALL);
  const policy = read('policy.schema.json');
  assert.equal(policy.$defs.backend.anyOf[0].enum, [...BACKEND_NAMES]);
});

/** The backends/ modules a fresh process resolves to load `name` through load.ts (module resolution hooks report them). */
function modulesLoadedFor(name: string): string[] {
  const script = `
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const { port1, port2 } = new MessageChannel();
const seen = [];
port1.on('message', (url) => seen.push(url));
port1.unref();
const hooks = 'let port; export function initialize(d) { port = d.port; }' +
  'export async function resolve(s, c, next) { const r = await next(s, c); port.postMessage(r.url); return r; }';
register('data:text/javascript,' + encodeURIComponent(hooks), { data: { port: port2 }, transferList: [port2] });
const { loadBackend } = await import(${JSON.stringify(pathToFileURL(join(DIST, 'backends', 'load.js')).href)});
await loadBackend(${JSON.stringify(name)});
await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify(seen));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const prefix = pathToFileURL(join(DIST, 'backends')).href + '/';
  return (JSON.parse(r.stdout) as string[]).filter((u) => u.startsWith(prefix)).map((u) => u.slice(prefix.length));
}

test('loading one backend loads its module alone: no other backend, no registry', () => {
  for (const name of ['full-copy', 'reflink'] as const) {
    const loaded = modulesLoadedFor(name);
    assert.ok(loaded.includes(BACKENDS[name].module), `${name}: ${loaded.join(', ')}`);
    const others: string[] = ALL.filter((n) => n !== name).map((n) => BACKENDS[n].module);
    assert.equal(
      loaded.filter((m) => others.includes(m) || m === 'registry.js' || m === 'module.js'),
      [],
      `${name} loaded more than its module`,
    );
  }
});

test.run();
