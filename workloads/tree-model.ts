// A tiny in-memory tree for expected results: entries by path, changed by the same operations a
// workload performs on disk (fileops' matrix, the two scripted agents).
import { sha256Digest, type Digest } from '../model/canonical-json.js';
import { sortEntries, type Entry } from '../model/snapshot.js';

/** Entries by path, with the operations a workload performs; used to compute expected results. */
export class TreeModel {
  readonly entries = new Map<string, Entry>();

  constructor(base: Entry[]) {
    for (const e of base) this.entries.set(e.path, e);
  }

  private parents(path: string): void {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (!this.entries.has(p)) this.entries.set(p, { path: p, kind: 'dir' });
    }
  }

  mkdir(path: string): void {
    this.parents(path);
    if (!this.entries.has(path)) this.entries.set(path, { path, kind: 'dir' });
  }

  /** Write a whole file; an existing file keeps its exec bit (writes go through the same inode). */
  write(path: string, bytes: Buffer | string, exec?: boolean): void {
    this.parents(path);
    const old = this.entries.get(path);
    const buf = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    this.entries.set(path, {
      path,
      kind: 'file',
      digest: sha256Digest(buf),
      size: buf.length,
      exec: exec ?? (old?.kind === 'file' ? old.exec : false),
    });
  }

  /** Set a file's digest and size directly (for large files hashed by streaming). */
  writeDigest(path: string, digest: Digest, size: number): void {
    const old = this.entries.get(path);
    this.parents(path);
    this.entries.set(path, { path, kind: 'file', digest, size, exec: old?.kind === 'file' ? old.exec : false });
  }

  chmod(path: string, exec: boolean): void {
    const e = this.entries.get(path);
    if (e?.kind !== 'file') throw new Error(`model: ${path} is not a file`);
    this.entries.set(path, { ...e, exec });
  }

  symlink(path: string, target: string): void {
    this.parents(path);
    this.entries.set(path, { path, kind: 'symlink', target });
  }

  remove(path: string): void {
    for (const p of [...this.entries.keys()]) if (p === path || p.startsWith(`${path}/`)) this.entries.delete(p);
  }

  rename(from: string, to: string): void {
    this.parents(to);
    for (const [p, e] of [...this.entries]) {
      if (p === from || p.startsWith(`${from}/`)) {
        this.entries.delete(p);
        const q = to + p.slice(from.length);
        this.entries.set(q, { ...e, path: q });
      }
    }
  }

  get(path: string): Entry | undefined {
    return this.entries.get(path);
  }

  result(): Entry[] {
    return sortEntries([...this.entries.values()]);
  }
}
