// The trees cow.ts measures: a deterministic node_modules-shaped tree of source-like text
// and a few large binaries, the pinned real node_modules fixture, and the seeded PRNG behind both
// the tree and the per-round case order.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { $ as zx } from 'zx';

const $ = zx({ verbose: false, quiet: true });

/** A real node_modules of about 29,000 files and 600 MB (npm 11, --ignore-scripts), pinned. */
export const NPM_FIXTURE_DEPENDENCIES: Record<string, string> = {
  next: '16.0.0',
  react: '19.2.0',
  'react-dom': '19.2.0',
  typescript: '5.9.3',
  vite: '7.1.12',
  jest: '30.2.0',
  '@babel/core': '7.28.5',
  eslint: '9.38.0',
  webpack: '5.102.1',
  '@types/node': '20.19.43',
  lodash: '4.17.21',
  rxjs: '7.8.2',
  '@mui/material': '7.3.4',
  '@emotion/react': '11.14.0',
  '@emotion/styled': '11.14.1',
  'aws-sdk': '2.1692.0',
};

/** xorshift32 in [0, 1). */
export function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

export function shuffle<T>(xs: readonly T[], rand: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** Source-like bytes: printable text from a fixed random pool, sliced at varying offsets. */
function makePool(bytes: number, rand: () => number): Buffer {
  const alphabet = Buffer.from('abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789(){};=.,\n');
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) b[i] = alphabet[Math.floor(rand() * alphabet.length)]!;
  return b;
}

/**
 * A node_modules-shaped tree: packages of small source files plus a few large binaries, about
 * `files` files and `mib` MiB. Deterministic for a given seed.
 */
export function generateTree(root: string, files: number, mib: number, seed: number): { files: number; bytes: number } {
  const rand = prng(seed);
  const pool = makePool(48 * 1024 * 1024, rand);
  const large = Math.max(0, Math.round((mib * 0.55) / 15));
  const largeBytes = 15 * 1024 * 1024;
  const smallFiles = files - large;
  const smallBudget = Math.max(smallFiles * 512, mib * 1024 * 1024 - large * largeBytes);
  const avg = smallBudget / smallFiles;
  let written = 0;
  const perPkg = 40;
  let n = 0;
  for (let p = 0; n < smallFiles; p++) {
    const pkg = join(root, 'node_modules', `pkg-${String(p).padStart(5, '0')}`);
    mkdirSync(join(pkg, 'lib', 'internal'), { recursive: true });
    for (let f = 0; f < perPkg && n < smallFiles; f++, n++) {
      // Skewed sizes: many tiny files, some tens of KiB (mean ~ avg).
      const size = Math.max(16, Math.min(pool.length - 1, Math.round(-Math.log(1 - rand()) * avg)));
      const off = Math.floor(rand() * (pool.length - size));
      const name = f === 0 ? 'package.json' : f === 1 ? 'README.md' : f < 25 ? `lib/m${f}.js` : `lib/internal/m${f}.d.ts`;
      writeFileSync(join(pkg, name), pool.subarray(off, off + size));
      written += size;
    }
  }
  mkdirSync(join(root, 'node_modules', '.bin-native'), { recursive: true });
  const mib1 = 1024 * 1024;
  for (let i = 0; i < large; i++) {
    const buf = Buffer.allocUnsafe(largeBytes);
    for (let o = 0; o < largeBytes; o += mib1)
      pool.copy(
        buf,
        o,
        Math.floor(rand() * (pool.length - mib1)),
        Math.floor(rand() * (pool.length - mib1)) + Math.min(mib1, largeBytes - o),
      );
    writeFileSync(join(root, 'node_modules', '.bin-native', `native-${i}.node`), buf);
    written += largeBytes;
  }
  writeFileSync(join(root, 'package.json'), '{"name":"bench-fixture","private":true}\n');
  return { files: n + large + 1, bytes: written };
}

/** Commit the whole tree, ignored files too, for the `git worktree add` baseline (a worktree then holds what a session does). */
export async function gitCommitAll(dir: string): Promise<number | null> {
  const env = { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' };
  const r = await $({ cwd: dir, env })`sh -c ${'git init -q && git -c core.bigFileThreshold=1m add -A -f && git commit -q -m fixture'}`;
  return r.exitCode;
}
