// The base both real agents of a case start from: multi-line files both edit differently, files to
// delete and rename, a script without its exec bit, a Unicode path, and a 64 KiB file for the clone
// backends to share (small files inline in btrfs metadata never show shared extents).
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const REAL_AGENTS_BASE: Record<string, { content: string; exec: boolean }> = {
  'README.md': {
    content: '# real agents fixture\n\nTwo real agent CLIs work on this tree at the same time, each in its own session.\n',
    exec: false,
  },
  'shared.txt': { content: 'line 1: shared by every agent\nline 2: each agent rewrites this line\nline 3: unchanged\n', exec: false },
  'src/app.ts': {
    content: 'export function greet(name: string): string {\n  return `hello ${name}`;\n}\n\nexport const version = 1;\n',
    exec: false,
  },
  'remove-me.txt': { content: 'each agent deletes this file\n', exec: false },
  'rename-me.txt': { content: 'each agent renames this file\n', exec: false },
  'run.sh': { content: '#!/bin/sh\necho run\n', exec: false },
  'docs/guide.md': { content: "# guide\n\nEach agent's relative symlink points here.\n", exec: false },
  'docs/ünïcödé/名前.md': { content: '# 名前\n\nA Unicode path in the base.\n', exec: false },
  'assets/reference.txt': { content: Array.from({ length: 4096 }, (_, i) => `reference line ${i}\n`).join(''), exec: false },
};

/** Write the base into `dir` (which must not exist yet or be empty). */
export function writeRealAgentsBase(dir: string): void {
  for (const [path, f] of Object.entries(REAL_AGENTS_BASE)) {
    const abs = join(dir, path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, f.content);
    chmodSync(abs, f.exec ? 0o755 : 0o644);
  }
}
