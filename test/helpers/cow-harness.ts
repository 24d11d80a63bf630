// Shared by the backend conformance and property tests: per-test loopback filesystems (through
// scripts/host-setup.ts, always released), the base fixture, and the oracle checks.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { baseDir, type BaseFamily } from '../../backends/shared/base-tree.js';
import { mountPointsUnder } from '../../model/os/mounts.js';
import { scanTree } from '../../model/scan/scan.js';
import { diffEntries, type Entry } from '../../model/snapshot.js';
import type { Digest } from '../../model/canonical-json.js';
import { SessionService } from '../../sessions/service.js';
import * as hostSetup from '../../scripts/host-setup.js';
import type { LoopFsType } from '../../scripts/host-setup.js';

export type { LoopFsType } from '../../scripts/host-setup.js';

/** The host-setup script's functions (loopback filesystems made and always released). */
export async function loadHostSetup(): Promise<typeof hostSetup> {
  return hostSetup;
}

/** Mount a small loopback filesystem under `dir` for the duration of `fn`; always released. */
export async function withLoopFs<T>(fsType: LoopFsType, dir: string, fn: (mountPoint: string) => Promise<T>, sizeMiB = 512): Promise<T> {
  const hs = await loadHostSetup();
  const made = await hs.mountLoopFs({ fsType, image: join(dir, `${fsType}.img`), mountPoint: join(dir, `mnt-${fsType}`), sizeMiB });
  try {
    return await fn(made.mountPoint);
  } finally {
    await hs.releaseLoopFs(made);
  }
}

export function pattern(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b.writeUInt32LE(x >>> 0, Math.min(i, size - 4));
  }
  return b;
}

/** The base tree the operation matrix expects (no empty directories, so git carries it whole). */
export function writeMatrixFixture(src: string): void {
  const file = (p: string, data: string | Buffer, mode = 0o644) => {
    mkdirSync(join(src, p, '..'), { recursive: true });
    writeFileSync(join(src, p), data);
    chmodSync(join(src, p), mode);
  };
  file('README.md', '# fixture\n');
  file('src/a.txt', 'original a\n');
  file('src/b.txt', 'original b\n');
  file('src/delete-me.txt', 'bye\n');
  file('log.txt', 'first line\n');
  file('trunc.txt', 'this will be truncated\n');
  file('olddir/x.txt', 'x\n');
  file('olddir/sub/y.txt', 'y\n');
  file('lib/util.js', 'export const util = 1;\n');
  file('lib/other.js', 'export const other = 2;\n');
  file('scripts/run.sh', '#!/bin/sh\necho run\n', 0o644);
  file('bin/tool', '#!/bin/sh\necho tool\n', 0o755);
  file('large/big.bin', pattern(6 * 1024 * 1024, 3));
  for (let i = 0; i < 600; i++) file(`many/f${String(i).padStart(4, '0')}.txt`, `small file ${i}\n`);
  symlinkSync('src/a.txt', join(src, 'link-in-base'));
}

export function gitCommitAll(src: string): void {
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', src, ...args], {
      stdio: 'pipe',
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' },
    });
  if (!existsSync(join(src, '.git'))) git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '--allow-empty', '-m', 'fixture');
}

/** Every materialized base of `digest` in the store still holds exactly the base entries. */
export async function basesUnchanged(svc: SessionService, digest: Digest, expected: Entry[]): Promise<{ ok: boolean; detail: string }> {
  const hexDir = join(svc.store.paths.bases, digest.slice(7));
  const families = existsSync(hexDir) ? (readdirSync(hexDir) as BaseFamily[]) : [];
  for (const family of families) {
    const dir = baseDir({ store: svc.store, probeDir: svc.store.paths.tmp }, digest, family);
    const { entries } = await scanTree(dir, { excludes: [] });
    const d = diffEntries(expected, entries);
    if (d.length)
      return {
        ok: false,
        detail: `base ${family} changed: ${d
          .slice(0, 3)
          .map((c) => `${c.kind} ${c.path}`)
          .join(', ')}`,
      };
  }
  return { ok: true, detail: `${families.length} base(s) intact` };
}

/** Mounts at or below `dir` (what an overlay session leaves behind if release failed). */
export function mountsUnder(dir: string): string[] {
  return mountPointsUnder(dir);
}

export interface CaseOutcome {
  backend: string;
  resultDigest: Digest;
  digestEqualsOracle: boolean;
  siblingUnchanged: boolean;
  baseUnchanged: boolean;
  freshSessionEqualsBase: boolean;
  cleanupComplete: boolean;
  cloneObserved: boolean | null;
  details: string[];
}

export function passes(o: CaseOutcome): boolean {
  return o.digestEqualsOracle && o.siblingUnchanged && o.baseUnchanged && o.freshSessionEqualsBase && o.cleanupComplete;
}

/**
 * One backend through the real lifecycle: a sibling session, a worker session that runs the
 * operation matrix (two passes, re-entry), checkpoint, then the oracle checks and discard.
 * `mutate` runs between the passes' lifecycle steps (for example to drop an overlay mount).
 */
export async function runMatrixCase(
  svc: SessionService,
  backend: string,
  source: string,
  oracleDigest: Digest | null,
  options: { applyScript: string; allowTestOnly?: boolean; beforeReentry?: (root: string) => Promise<void> },
): Promise<CaseOutcome> {
  const details: string[] = [];
  const tag = backend.replace(/[^a-z0-9]/g, '');
  const sib = `${tag}-sib`;
  const work = `${tag}-work`;
  const fresh = `${tag}-fresh`;
  const sibCreated = await svc.create(sib, { from: source, backend, allowTestOnly: options.allowTestOnly });
  const created = await svc.create(work, { from: source, backend, allowTestOnly: options.allowTestOnly });
  const baseSnap = svc.readSnapshot(created.base);
  // A CoW create says how much it shares with its base: every file of it, and their bytes.
  const baseFiles = baseSnap.entries.flatMap((e) => (e.kind === 'file' ? [e.size] : []));
  const shared = { files: baseFiles.length, bytes: baseFiles.reduce((a, b) => a + b, 0) };
  if (['reflink', 'overlay', 'btrfs-snapshot'].includes(backend)) assert.equal(created.cloneCounts, shared, `${backend} cloneCounts`);
  const first = await svc.run(work, process.execPath, [options.applyScript, 'first'], { stdio: 'pipe' });
  if (first.exitCode !== 0) details.push(`first pass exited ${first.exitCode}: ${first.stderr}`);
  await options.beforeReentry?.(svc.sessionRoot(work));
  const second = await svc.run(work, process.execPath, [options.applyScript, 'reentry'], { stdio: 'pipe' });
  if (second.exitCode !== 0) details.push(`re-entry pass exited ${second.exitCode}: ${second.stderr}`);
  const cp = await svc.checkpoint(work);
  const digestEqualsOracle = oracleDigest === null || cp.snapshot === oracleDigest;
  if (!digestEqualsOracle) {
    const oracle = svc.readSnapshot(oracleDigest!);
    const mine = svc.readSnapshot(cp.snapshot);
    details.push(
      `result differs from oracle: ${diffEntries(oracle.entries, mine.entries)
        .map((c) => `${c.kind} ${c.path}`)
        .join(', ')}`,
    );
  }
  const sibDiff = diffEntries(baseSnap.entries, await svc.scanEntries(sib));
  if (sibDiff.length)
    details.push(
      `sibling changed: ${sibDiff
        .slice(0, 5)
        .map((c) => `${c.kind} ${c.path}`)
        .join(', ')}`,
    );
  const base = await basesUnchanged(svc, created.base, baseSnap.entries);
  if (!base.ok) details.push(base.detail);
  // A session made now must still be the base: catches a base changed through shared inodes.
  await svc.create(fresh, { from: source, backend, allowTestOnly: options.allowTestOnly });
  const freshDiff = diffEntries(baseSnap.entries, await svc.scanEntries(fresh));
  if (freshDiff.length)
    details.push(
      `a fresh session differs from the base: ${freshDiff
        .slice(0, 5)
        .map((c) => `${c.kind} ${c.path}`)
        .join(', ')}`,
    );
  const dirs = [sib, work, fresh].map((n) => svc.sessionDir(n));
  for (const n of [sib, work, fresh]) await svc.discard(n);
  const leftovers = dirs.filter((d) => existsSync(d));
  const mounts = dirs.flatMap((d) => mountsUnder(d));
  const cleanupComplete = leftovers.length === 0 && mounts.length === 0;
  if (!cleanupComplete) details.push(`cleanup left ${leftovers.length} dirs and ${mounts.length} mounts`);
  return {
    backend,
    resultDigest: cp.snapshot,
    digestEqualsOracle,
    siblingUnchanged: sibDiff.length === 0,
    baseUnchanged: base.ok,
    freshSessionEqualsBase: freshDiff.length === 0,
    cleanupComplete,
    cloneObserved: created.cloneObserved ?? sibCreated.cloneObserved ?? null,
    details,
  };
}
