// File extents from FIEMAP, through filefrag (e2fsprogs), with the kernel's shared flag: the one
// reader of filefrag's output. Node cannot issue ioctl(FS_IOC_FIEMAP) itself without native code;
// filefrag maps 5,000 files in about 0.1 s (measured on loopback XFS), one process per batch.
// `-s` syncs each file first, so delayed allocations have their real extents; `-b1` prints every
// offset and length in bytes.
import { PdbError } from '../../model/errors.js';
import { runTool } from '../../model/os/run-tool.js';

export interface Extent {
  /** Physical byte offset on the device (0 for data inline in btrfs metadata). */
  physical: number;
  /** Allocated bytes (whole blocks). */
  length: number;
  /** FIEMAP flags as filefrag names them: shared, inline, unwritten, last, eof, encoded, ... */
  flags: string[];
}

/** Files per filefrag process, and the bytes of their paths (well under ARG_MAX). */
const BATCH_FILES = 1000;
const BATCH_CHARS = 96 * 1024;
/** filefrag processes at once. */
const CONCURRENCY = 2;

/** `   2:  3145728.. 6291455:    3244032..   6389759: 3145728:    7438336: last,shared,eof` (expected and flags optional). */
const EXTENT_LINE = /^\s*\d+:\s*\d+\.\.\s*\d+:\s*(\d+)\.\.\s*\d+:\s*(\d+):(?:\s*\d+:)?\s*([a-z_,]*)\s*$/;

/**
 * Parse `filefrag -v -b1` output for `paths`, in the order they were given. filefrag prints one
 * block per file it could map, starting `File size of <path> is`, and nothing on stdout for a file
 * it could not open, so a path without a block is absent from the result.
 */
export function parseFilefrag(stdout: string, paths: readonly string[]): Map<string, Extent[]> {
  const found: Array<{ path: string; at: number }> = [];
  let cursor = 0;
  for (const path of paths) {
    const at = stdout.indexOf(`File size of ${path} is `, cursor);
    if (at < 0) continue;
    found.push({ path, at });
    cursor = at + path.length;
  }
  const out = new Map<string, Extent[]>();
  found.forEach(({ path, at }, i) => {
    const start = stdout.indexOf('\n', at + path.length);
    const block = stdout.slice(start < 0 ? stdout.length : start, found[i + 1]?.at ?? stdout.length);
    const extents: Extent[] = [];
    for (const line of block.split('\n')) {
      const m = EXTENT_LINE.exec(line);
      if (m) extents.push({ physical: Number(m[1]), length: Number(m[2]), flags: m[3] ? m[3].split(',') : [] });
    }
    out.set(path, extents);
  });
  return out;
}

function batches(paths: readonly string[]): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let chars = 0;
  for (const p of paths) {
    if (cur.length > 0 && (cur.length >= BATCH_FILES || chars + p.length > BATCH_CHARS)) {
      out.push(cur);
      cur = [];
      chars = 0;
    }
    cur.push(p);
    chars += p.length + 1;
  }
  if (cur.length) out.push(cur);
  return out;
}

export interface ExtentMaps {
  maps: Map<string, Extent[]>;
  /** What filefrag said on stderr about files it did not map (a file removed meanwhile, a filesystem without FIEMAP). */
  stderr: string;
}

/** The extents of every file in `paths` (absolute). E_TOOL_MISSING without filefrag. */
export async function mapExtents(paths: readonly string[]): Promise<ExtentMaps> {
  const maps = new Map<string, Extent[]>();
  const errors: string[] = [];
  const queue = batches(paths);
  const worker = async (): Promise<void> => {
    for (let batch = queue.shift(); batch; batch = queue.shift()) {
      // `--` so that a file name starting with "-" is never taken for an option.
      const r = await runTool('filefrag', ['-v', '-s', '-b1', '--', ...batch]);
      if (r.error?.code === 'ENOENT')
        throw new PdbError('E_TOOL_MISSING', 'filefrag is not installed, so shared extents cannot be measured (FIEMAP)', {
          hint: 'Install it (apt-get install e2fsprogs).',
        });
      if (r.error) throw new PdbError('E_IO', `filefrag could not start: ${r.error.message}`, { cause: r.error });
      for (const [p, e] of parseFilefrag(r.stdout, batch)) maps.set(p, e);
      if (r.stderr.trim()) errors.push(r.stderr.trim());
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
  return { maps, stderr: errors.join('\n') };
}

/** Bytes covered by the union of `[start, start + length)` ranges (a shared extent seen twice counts once). */
export function unionBytes(ranges: Array<[number, number]>): number {
  ranges.sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -1;
  for (const [start, length] of ranges) {
    const stop = start + length;
    if (stop <= end) continue;
    total += stop - Math.max(start, end);
    end = stop;
  }
  return total;
}
