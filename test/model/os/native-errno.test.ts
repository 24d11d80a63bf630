// The native addon reads a directory as readdir(3) says to: errno set to 0 just before each call,
// so a NULL is an error only when errno is set by readdir itself. A CI run failed a checkpoint of a
// 3,000-file directory with "E_IO: ENOMEM" (stop 62): the walk set errno once before its loop, and a
// strdup or realloc that succeeds may leave errno set (glibc's malloc falling back from brk to mmap
// leaves ENOMEM). Here a preloaded library makes every successful strdup (the walk's names) and
// strlen (listAt's names) leave ENOMEM behind, so a walk that trusts a stale errno fails every time.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nativeUnavailable } from '../../../model/scan/scanner.js';
import { CLI, REPO_ROOT, hasCommand, skipTest, tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-native-errno-');
test.after(() => t.cleanup());

const SHIM = `#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
size_t strlen(const char *s) {
  const char *p = s;
  while (*p) p++;
  errno = ENOMEM;
  return (size_t)(p - s);
}
char *strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  errno = ENOMEM;
  return p;
}
`;

/** The preloaded library, built here; or why it cannot be. */
function shim(): { path: string } | { why: string } {
  const why = nativeUnavailable();
  if (why) return { why };
  if (process.platform !== 'linux') return { why: 'LD_PRELOAD of a shared library is a Linux (glibc) test' };
  if (!hasCommand('cc')) return { why: 'no C compiler (cc) to build the preloaded library' };
  const src = join(t.dir, 'shim.c');
  const path = join(t.dir, 'shim.so');
  writeFileSync(src, SHIM);
  execFileSync('cc', ['-shared', '-fPIC', '-O0', '-fno-builtin', '-o', path, src]);
  return { path };
}

const built = shim();
/** A child's environment: no daemon (it would run the command without the library), and the library preloaded or not. */
const childEnv = (shimmed: boolean, env: NodeJS.ProcessEnv = {}) => ({
  ...process.env,
  NO_COLOR: '1',
  PDB_ENV_DAEMON: '0',
  ...env,
  LD_PRELOAD: shimmed && 'path' in built ? built.path : '',
});

test('a checkpoint walks a 400-entry directory whatever errno a successful allocation leaves behind', () => {
  if ('why' in built) return skipTest('native walk and a stale errno', 'native-scan', built.why);
  const src = join(t.dir, 'src');
  mkdirSync(join(src, 'big', 'sub'), { recursive: true });
  for (let i = 0; i < 400; i++) writeFileSync(join(src, 'big', `f${i}.txt`), `${i}\n`);
  writeFileSync(join(src, 'big', 'sub', 'x.txt'), 'x\n');
  const store = join(t.dir, 'store');
  const run = (args: string[], shimmed = false) =>
    spawnSync(process.execPath, [CLI, ...args, '--store', store], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: childEnv(shimmed, { PDB_ENV_SCANNER: 'native' }),
    });
  assert.is(run(['create', 's', '--from', src]).status, 0);
  const root = run(['path', 's']).stdout.trim();
  for (let i = 0; i < 400; i += 7) appendFileSync(join(root, 'big', `f${i}.txt`), 'more\n');
  writeFileSync(join(root, 'big', 'sub', 'y.txt'), 'y\n');
  const cp = run(['checkpoint', 's', '--json'], true);
  assert.is(cp.status, 0, cp.stderr);
  const diff = run(['diff', 's', '--json']);
  assert.is(diff.status, 0, diff.stderr);
  const changed = JSON.stringify(JSON.parse(diff.stdout));
  for (const p of ['big/f0.txt', 'big/f7.txt', 'big/f399.txt', 'big/sub/y.txt'])
    assert.ok(changed.includes(`"${p}"`), `the checkpoint missed ${p}`);
  assert.not.ok(changed.includes('"big/f1.txt"'), 'an unchanged file is in the diff');
});

test('listAt lists a directory whatever errno a successful allocation leaves behind', () => {
  if ('why' in built) return skipTest('native listAt and a stale errno', 'native-scan', built.why);
  const dir = join(t.dir, 'list');
  mkdirSync(dir);
  for (let i = 0; i < 300; i++) writeFileSync(join(dir, `n${i}`), '');
  const script = `
    const { openRoot, listAt, closeDir, dirHandleWay } = await import(${JSON.stringify(join(REPO_ROOT, 'dist/model/os/at-calls.js'))});
    const h = openRoot(${JSON.stringify(dir)});
    try { console.log(JSON.stringify({ way: dirHandleWay(), names: listAt(h).sort() })); } finally { closeDir(h); }`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: childEnv(true, { PDB_ENV_DIR_HANDLES: 'native' }),
  });
  assert.is(r.status, 0, r.stderr);
  const { way, names } = JSON.parse(r.stdout) as { way: string; names: string[] };
  assert.is(way, 'native', 'listAt did not run through the native addon');
  assert.is(names.length, 300);
  assert.ok(names.includes('n0') && names.includes('n299'));
});

test.run();
