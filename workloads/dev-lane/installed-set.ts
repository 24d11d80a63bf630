// What an install left in node_modules, read from the package manager's own records, and how it
// differs from what package.json and the lockfile pin.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LaneKind } from './fixture.js';
import { readJson } from './tools.js';

/** The installed package set (name@version per install location), from the package manager's own records. */
export function installedSet(kind: LaneKind, root: string): string[] {
  if (kind === 'npm') {
    const hidden = join(root, 'node_modules', '.package-lock.json');
    if (!existsSync(hidden)) return [];
    const doc = readJson(hidden) as { packages?: Record<string, { version?: string }> };
    return Object.entries(doc.packages ?? {})
      .filter(([k]) => k.startsWith('node_modules/'))
      .map(([k, v]) => `${k.slice('node_modules/'.length)}@${v.version ?? '?'}`)
      .sort();
  }
  // pnpm: one directory per resolved package (name@version plus peer suffix) in the virtual store.
  const store = join(root, 'node_modules', '.pnpm');
  if (!existsSync(store)) return [];
  return readdirSync(store, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'node_modules')
    .map((d) => d.name)
    .sort();
}

/** Direct dependencies whose installed version differs from the exact pin in package.json. */
export function directDependencyMismatches(root: string): string[] {
  const pkg = readJson(join(root, 'package.json')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const wanted = { ...pkg.dependencies, ...pkg.devDependencies };
  const bad: string[] = [];
  for (const [name, version] of Object.entries(wanted)) {
    const manifest = join(root, 'node_modules', name, 'package.json');
    const got = existsSync(manifest) ? (readJson(manifest) as { version?: string }).version : undefined;
    if (got !== version) bad.push(`${name} wanted ${version}, found ${got ?? 'nothing'}`);
  }
  return bad;
}

/** npm: every package the hidden lockfile records has the lockfile's version, and no non-optional lockfile package is missing. */
export function npmLockfileMismatches(root: string): string[] {
  const lock = readJson(join(root, 'package-lock.json')) as {
    packages: Record<string, { version?: string; optional?: boolean; dev?: boolean }>;
  };
  const hiddenPath = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(hiddenPath)) return ['node_modules/.package-lock.json is missing'];
  const hidden = readJson(hiddenPath) as { packages: Record<string, { version?: string }> };
  const bad: string[] = [];
  for (const [k, v] of Object.entries(hidden.packages)) {
    const want = lock.packages[k];
    if (!want) bad.push(`${k} is installed but not in the lockfile`);
    else if (want.version !== v.version) bad.push(`${k} is ${v.version}, lockfile says ${want.version}`);
  }
  for (const [k, v] of Object.entries(lock.packages)) {
    if (k === '' || v.optional) continue;
    if (!hidden.packages[k]) bad.push(`${k} is in the lockfile but not installed`);
  }
  return bad;
}
