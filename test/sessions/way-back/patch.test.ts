// Property: for random changesets (binary files, symlinks, exec bits, deletes, dir<->file retypes,
// non-ASCII names), `git apply` of the exported patch to a copy of the base gives exactly the
// session's result. PDB_PATCH_RUNS changes the run count (default 12: each run is a session).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionService } from '../../../sessions/service.js';
import { isRoot, skipTest, tempDir } from '../../helpers/index.js';
import { applyOps, filesOf, forRandomChangesets, gitRun, makeRepo } from '../../helpers/way-back-fixture.js';

const RUNS = Number(process.env.PDB_PATCH_RUNS ?? 12);
const t = tempDir('pdb-patch-');
test.after(() => t.cleanup());

test('diff --patch and --stat are git output; a session without changes gives an empty patch', async () => {
  const src = makeRepo(join(t.dir, 'one'));
  const svc = await SessionService.open(join(t.dir, 'one-store'), { create: true });
  const s = await svc.create('s', { from: src });
  assert.is((await svc.diffPatch('s', 'patch')).length, 0);
  applyOps(s.root, [
    { op: 'write', path: '日本 語.md', bytes: [104, 105, 10], exec: false },
    { op: 'delete', path: 'lib/x.js' },
  ]);
  const patch = (await svc.diffPatch('s', 'patch')).toString('utf8');
  assert.match(patch, /^diff --git a\/lib\/x\.js b\/lib\/x\.js\ndeleted file mode 100644\nindex [0-9a-f]{40}\.\.0{40}\n/m);
  assert.match(patch, /new file mode 100644/);
  const stat = (await svc.diffPatch('s', 'stat')).toString('utf8');
  assert.match(stat, /2 files changed, 1 insertion\(\+\), 1 deletion\(-\)/);
});

test('without git on PATH, diff --patch and export --patch are E_TOOL_MISSING with a hint', async () => {
  const src = makeRepo(join(t.dir, 'nogit'));
  const svc = await SessionService.open(join(t.dir, 'nogit-store'), { create: true });
  const s = await svc.create('s', { from: src });
  applyOps(s.root, [{ op: 'delete', path: 'a.txt' }]);
  await svc.checkpoint('s');
  const path = process.env.PATH;
  process.env.PATH = join(t.dir, 'no-such-bin');
  try {
    for (const run of [() => svc.diffPatch('s', 'patch'), () => svc.exportPatch('s', join(t.dir, 'nogit.patch'))]) {
      const err = await run().then(
        () => null,
        (e: unknown) => e as { code: string; hint?: string },
      );
      assert.is(err?.code, 'E_TOOL_MISSING');
      assert.match(err?.hint ?? '', /Install git/);
    }
  } finally {
    process.env.PATH = path;
  }
  assert.not.ok(existsSync(join(t.dir, 'nogit.patch')));
});

test(`git apply of the exported patch reproduces the session's result (${RUNS} random changesets)`, async () => {
  await forRandomChangesets(t.dir, RUNS, async ({ dir, src, svc, checkpoint, expected, ops }) => {
    const file = join(dir, 'out.patch');
    const r = await svc.exportPatch('s', file);
    assert.is(r.changes, checkpoint.changes);
    const copy = join(dir, 'copy');
    execFileSync('cp', ['-a', src, copy]);
    if (readFileSync(file).length > 0) gitRun(copy, ['apply', '--binary', file]);
    assert.equal(await filesOf(copy), expected, JSON.stringify(ops));
  });
});

test("E_NO_SPACE where the patch is written names that filesystem, not the store's", async () => {
  if (!isRoot()) return skipTest('E_NO_SPACE for a patch', 'root', 'mounting a small tmpfs needs root');
  const src = makeRepo(join(t.dir, 'nospace'));
  const svc = await SessionService.open(join(t.dir, 'nospace-store'), { create: true });
  const s = await svc.create('s', { from: src });
  writeFileSync(join(s.root, 'big.txt'), 'a line of text\n'.repeat(40_000));
  await svc.checkpoint('s');
  const mnt = join(t.dir, 'small');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]);
  try {
    const err = await svc.exportPatch('s', join(mnt, 'out.patch')).then(
      () => null,
      (e: unknown) => e as { code: string; hint?: string },
    );
    assert.is(err?.code, 'E_NO_SPACE');
    assert.match(err?.hint ?? '', new RegExp(mnt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    assert.not.match(err?.hint ?? '', /holds the store/);
    assert.equal(readdirSync(mnt), [], 'no temporary file left beside the patch');
  } finally {
    execFileSync('umount', [mnt]);
  }
});

test.run();
