import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gitWorktreeBackend } from '../../backends/git-worktree.js';
import { ObjectStore } from '../../model/store/object-store.js';
import { hasCommand, skipTest, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir('pdb-gitwt-');
test.after(() => t.cleanup());

test('probe: not a repository, or a repository without a commit, is E_NOT_GIT_REPO', async () => {
  if (!hasCommand('git')) return skipTest('git-worktree probe', 'git', 'git is not installed');
  const store = await ObjectStore.init(join(t.dir, 'store'));
  const plain = join(t.dir, 'plain');
  writeTree(plain, { 'a.txt': 'a' });
  assert.is((await gitWorktreeBackend.probe({ store, probeDir: store.paths.tmp, sourceDir: plain })).reason, 'E_NOT_GIT_REPO');
  assert.is((await gitWorktreeBackend.probe({ store, probeDir: store.paths.tmp })).reason, 'E_NOT_GIT_REPO');
  const empty = join(t.dir, 'empty');
  writeTree(empty, { 'a.txt': 'a' });
  execFileSync('git', ['-C', empty, 'init', '-q']);
  assert.is((await gitWorktreeBackend.probe({ store, probeDir: store.paths.tmp, sourceDir: empty })).reason, 'E_NOT_GIT_REPO');
  assert.is(gitWorktreeBackend.capabilities.carriesFullSnapshot, false);
});

test.run();
