// The fileops fixture: the fixed base files, a relative symlink, a large pseudo-random file, a
// tree of many small files and one entry of each contract kind under kinds/ (version 2), generated
// once per parameter set inside a run's work dir.
import { existsSync } from 'node:fs';
import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFixture } from '../commit-fixture.js';
import { writeEntryKinds } from '../entry-kinds.js';
import type { Fixture, ProcessRunner } from '../types.js';
import {
  BASE_FILES,
  LARGE_PATH,
  LARGE_STREAM,
  MiB,
  pseudoRandomChunk,
  readParams,
  smallContent,
  smallPath,
  TRUNCATE_BYTES,
  TRUNCATE_PATH,
  writeLarge,
} from './matrix.js';

export async function prepareFileopsFixture(workDir: string, params: Record<string, unknown>, proc: ProcessRunner): Promise<Fixture> {
  const p = readParams(params);
  // The name identifies the fixture exactly (it is reused by name within a run's work dir).
  const large = p.largeFileBytes % MiB === 0 ? `${p.largeFileBytes / MiB}m` : `${p.largeFileBytes}b`;
  const name = `fileops@2-${p.smallFiles}f-${large}`;
  const dir = join(workDir, name);
  const done = join(workDir, `${name}.ready`);
  if (existsSync(done)) return { name, sourceDir: dir };
  await rm(dir, { recursive: true, force: true });
  for (const [rel, content] of Object.entries(BASE_FILES)) {
    await mkdir(join(dir, rel, '..'), { recursive: true });
    await writeFile(join(dir, rel), content);
  }
  await chmod(join(dir, 'bin/tool.sh'), 0o644);
  await chmod(join(dir, 'bin/was-exec.sh'), 0o755);
  await writeFile(join(dir, TRUNCATE_PATH), pseudoRandomChunk(3, 0, TRUNCATE_BYTES));
  await mkdir(join(dir, 'links'), { recursive: true });
  await symlink('../README.md', join(dir, 'links/readme'));
  await mkdir(join(dir, 'large'), { recursive: true });
  await writeLarge(join(dir, LARGE_PATH), LARGE_STREAM, p.largeFileBytes, 'w');
  for (let i = 0; i < p.smallFiles; i++) {
    if (i % 100 === 0) await mkdir(join(dir, smallPath(i), '..'), { recursive: true });
    await writeFile(join(dir, smallPath(i)), smallContent(i));
  }
  await writeEntryKinds(dir);
  await commitFixture(dir, proc);
  await writeFile(done, '');
  return { name, sourceDir: dir };
}
