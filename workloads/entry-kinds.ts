// One entry of each kind of the v1 source contract, for the fixtures to carry: a text file, an
// executable, a relative symlink and an empty directory, under kinds/ where no step touches them.
// With them in every fixture the oracle is shown to catch a backend that gets any one kind wrong
// (wrong or zeroed bytes, a lost exec bit, a retargeted link, a lost empty directory). git keeps
// no empty directory, so git-worktree, which carries only what is committed, drops kinds/empty.
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entry } from '../model/snapshot.js';
import { TreeModel } from './tree-model.js';

export const ENTRY_KINDS = {
  text: { path: 'kinds/notes.md', content: '# kinds\n\nOne entry of each kind of the source contract.\n' },
  exec: { path: 'kinds/run.sh', content: '#!/bin/sh\necho kinds\n' },
  link: { path: 'kinds/notes-link.md', target: 'notes.md' },
  emptyDir: { path: 'kinds/empty' },
} as const;

export async function writeEntryKinds(dir: string): Promise<void> {
  const k = ENTRY_KINDS;
  await mkdir(join(dir, k.emptyDir.path), { recursive: true });
  await writeFile(join(dir, k.text.path), k.text.content);
  await chmod(join(dir, k.text.path), 0o644);
  await writeFile(join(dir, k.exec.path), k.exec.content);
  await chmod(join(dir, k.exec.path), 0o755);
  await symlink(k.link.target, join(dir, k.link.path));
}

/** The same entries in a tree model (for workloads that know their base in advance). */
export function addEntryKinds(model: TreeModel): void {
  const k = ENTRY_KINDS;
  model.mkdir(k.emptyDir.path);
  model.write(k.text.path, k.text.content, false);
  model.write(k.exec.path, k.exec.content, true);
  model.symlink(k.link.path, k.link.target);
}

/** The entries ENTRY_KINDS adds to a tree, as a scan of a fixture holding them records them. */
export function entryKindEntries(): Entry[] {
  const m = new TreeModel([]);
  addEntryKinds(m);
  return m.result();
}
