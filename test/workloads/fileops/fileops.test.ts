import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { countMismatches, totalMismatches } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { fileopsWorkload } from '../../../workloads/fileops/fileops.js';
import { FILEOPS_DEFAULTS } from '../../../workloads/fileops/matrix.js';
import { createProcessRunner } from '../../../workloads/process-runner.js';
import { tempDir } from '../../helpers/index.js';
import { stepContext } from '../../helpers/workload-ctx.js';

const PARAMS = { smallFiles: 250, largeFileBytes: 3 * 1024 * 1024 + 17, newSmallFiles: 30 };

async function setup(t: { dir: string }) {
  const fixture = await fileopsWorkload.prepareFixture(join(t.dir, 'fixtures'), PARAMS, createProcessRunner());
  const svc = await SessionService.open(join(t.dir, 'store'), { create: true });
  const made = await svc.create('s1', { from: fixture.sourceDir, backend: 'full-copy' });
  const base = svc.readSnapshot(made.base).entries;
  return { fixture, svc, base };
}

test('full plan defaults meet the contract: >= 20,000 small files and >= 256 MiB', () => {
  assert.ok(FILEOPS_DEFAULTS.smallFiles >= 20_000);
  assert.ok(FILEOPS_DEFAULTS.largeFileBytes >= 256 * 1024 * 1024);
});

test('every step runs in a real session and the result equals the expectation computed in advance', async () => {
  const t = tempDir();
  try {
    const { svc, base } = await setup(t);
    assert.ok(base.filter((e) => e.kind === 'file').length >= 250);
    const ctx = stepContext(svc, ['s1'], join(t.dir, 'scratch'), PARAMS, base);
    const names: string[] = [];
    for (const step of fileopsWorkload.steps(PARAMS)) {
      names.push(step.name);
      const out = await step.run(ctx);
      if (step.name === 'reentry') assert.is(out?.process?.exitCode, 0, 'the second process (pdb-env run) succeeded');
    }
    assert.equal(names, [
      'create',
      'read',
      'edit',
      'append',
      'truncate',
      'delete',
      'rename',
      'symlink',
      'exec',
      'small-tree',
      'reentry',
      'cleanup',
    ]);
    const expected = await fileopsWorkload.expected!(base, PARAMS);
    const cp = await svc.checkpoint('s1');
    const result = svc.readSnapshot(cp.snapshot).entries;
    assert.equal(countMismatches(expected, result), { content: 0, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 });

    // The expectation really encodes the matrix.
    const byPath = new Map(expected.map((e) => [e.path, e]));
    assert.equal(byPath.get('links/to-edit'), { path: 'links/to-edit', kind: 'symlink', target: '../src/edit-me.txt' });
    assert.is((byPath.get('bin/tool.sh') as { exec: boolean }).exec, true);
    assert.is((byPath.get('bin/was-exec.sh') as { exec: boolean }).exec, false);
    assert.is((byPath.get('src/truncate-me.bin') as { size: number }).size, 100);
    assert.is((byPath.get('large/blob.bin') as { size: number }).size, PARAMS.largeFileBytes + 1024 * 1024);
    for (const gone of ['tmp', 'doomed-dir', 'src/delete-me.txt', 'src/rename-me.txt', 'src/moving-dir'])
      assert.not.ok(byPath.has(gone), gone);
    for (const made of [
      'reentry/marker.txt',
      'out/a/b/c/new.txt',
      'out/empty-dir',
      'src/moved-dir/deep/b.txt',
      'generated/g0000/n000029.txt',
    ])
      assert.ok(byPath.has(made), made);
  } finally {
    t.cleanup();
  }
});

test('the expectation catches a step that was not done (mode) and a wrong base (read fails)', async () => {
  const t = tempDir();
  try {
    const { svc, base, fixture } = await setup(t);
    const ctx = stepContext(svc, ['s1'], join(t.dir, 'scratch'), PARAMS, base);
    for (const step of fileopsWorkload.steps(PARAMS)) if (step.name !== 'exec') await step.run(ctx);
    const expected = await fileopsWorkload.expected!(base, PARAMS);
    const result = svc.readSnapshot((await svc.checkpoint('s1')).snapshot).entries;
    const m = countMismatches(expected, result);
    assert.is(m.mode, 2);
    assert.is(totalMismatches(m), 2);

    // A session that does not hold the base's bytes fails the read step.
    await svc.create('s2', { from: fixture.sourceDir, backend: 'full-copy' });
    assert.is(fixture.name, 'fileops@2-250f-3145745b');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(svc.sessionRoot('s2'), 'tree/d0001/f000194.txt'), 'not the base\n');
    const read = fileopsWorkload.steps(PARAMS).find((s) => s.name === 'read')!;
    await read.run(stepContext(svc, ['s2'], join(t.dir, 'scratch2'), PARAMS, base)).then(
      () => assert.unreachable('read must fail'),
      (err) => assert.is(err.code, 'E_STEP_FAILED'),
    );
  } finally {
    t.cleanup();
  }
});

test.run();
