// Probes of the CoW backends make something real (a trial mount, a subvolume and a snapshot, a
// forced clone observed with FIEMAP) and start processes to do it: tens of milliseconds, more than
// the create they guard. What they find depends on the host and the store's filesystem, so an
// available answer is kept per store for the current boot, user and kernel. A create that then
// fails drops it, so the next one probes again; `pdb-env backends` always probes afresh.
import { readFileSync } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { release, uptime } from 'node:os';
import { join } from 'node:path';
import { probeBackend, type BackendReport } from '../../backends/registry.js';
import { backendRow } from '../../backends/table.js';
import type { Backend, BackendContext } from '../../backends/types.js';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';

/** This boot, user and kernel: a cached probe holds only while they are the same. */
function hostKey(): string {
  let boot: string;
  try {
    boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    boot = String(Math.round((Date.now() - uptime() * 1000) / 60_000)); // no boot id (macOS): the boot time, to the minute
  }
  return `${boot}:${process.getuid?.() ?? 'x'}:${release()}`;
}

function cacheFile(store: ObjectStore, name: string): string {
  return join(store.paths.root, 'probes', `${name}.json`);
}

/** The backend's probe, from the cache when it said available on this boot; probed (and cached when available) otherwise. */
export async function probeOnce(store: ObjectStore, backend: Backend, ctx: BackendContext): Promise<BackendReport> {
  // Only a backend whose probe depends on the host and the store's filesystem alone, not on the source directory.
  if (!backendRow(backend.name)?.traits.probeCacheable) return probeBackend(backend, ctx);
  const file = cacheFile(store, backend.name);
  const key = hostKey();
  try {
    const cached = JSON.parse(readFileSync(file, 'utf8')) as { key?: string; report?: BackendReport };
    if (cached.key === key && cached.report?.available === true && cached.report.name === backend.name) return cached.report;
  } catch {
    // no cache yet, or an unreadable one: probe
  }
  const report = await probeBackend(backend, ctx);
  if (report.available) {
    await mkdir(join(store.paths.root, 'probes'), { recursive: true });
    await writeFileAtomic(store.paths, file, `${JSON.stringify({ key, at: new Date().toISOString(), report })}\n`, 0o644, { sync: false });
  }
  return report;
}

/** Forget a cached probe (after a create with that backend failed). */
export async function forgetProbe(store: ObjectStore, name: string): Promise<void> {
  await unlink(cacheFile(store, name)).catch(() => {}); // absent is the goal
}
