// The call into the native scanner (native/walk.c) and the decoding of what it returns: the
// touched entries as packed records, its failures as the same typed errors tree-walk.ts throws.
import { PdbError } from '../errors.js';
import { osError } from '../os/native.js';
import type { IndexColumns } from './index-columns.js';
import { kindOf, nonUtf8, vanished, type RawEntry, type RawScan, type WalkInput } from './tree-walk.js';

type SnapshotColumns = Pick<
  IndexColumns,
  'kind' | 'flags' | 'parent' | 'nameEnd' | 'nameBytes' | 'valueEnd' | 'valueBytes' | 'digest' | 'size'
>;
type Columns = Pick<IndexColumns, 'kind' | 'flags' | 'parent' | 'nameEnd' | 'nameBytes' | 'ino' | 'size' | 'mtime' | 'ctime' | 'mode'>;

export interface NativeAddon {
  version: string;
  /** head, every row's canonical Snapshot entry (comma-separated), tail (native/snapshot.c); `ends` takes where each row's entry ends. */
  snapshotBytes(columns: SnapshotColumns, head: Buffer, tail: Buffer, ends?: Uint32Array): Buffer;
  /** The same bytes, each row `from` names copied from the Snapshot before; null when `prev` and its ends do not hold together (addon version 9). */
  snapshotSplice?(
    columns: SnapshotColumns,
    head: Buffer,
    tail: Buffer,
    ends: Uint32Array,
    prev: Uint8Array,
    prevEnds: Uint32Array,
    from: Int32Array,
  ): Buffer | null;
  scan(args: {
    root: string;
    excludeNames: string[];
    excludePaths: string[];
    dirRule: boolean;
    threads: number;
    rootStat: Float64Array;
    rootKeep?: Float64Array;
    index?: Columns;
    status?: Uint8Array;
    vouch?: Uint8Array;
  }):
    | { touched: Buffer; entries: number; files: number; bytes: number; dirsRead: number; linked: Buffer; error?: undefined }
    | { error: string; errno: number; path: Buffer; mode: number };
}

function failure(input: WalkInput, r: { error: string; errno: number; path: Buffer; mode: number }): Error {
  const abs = r.path.toString('utf8');
  const rel = abs.length > input.root.length ? abs.slice(input.root.length + 1) : '';
  switch (r.error) {
    case 'root-missing':
      return new PdbError('E_SOURCE_MISSING', `${input.root} does not exist`);
    case 'root-not-dir':
      return new PdbError('E_SOURCE_MISSING', `${input.root} is not a directory`);
    case 'unsupported':
      try {
        kindOf(r.mode, rel);
      } catch (err) {
        return err as Error;
      }
      return new PdbError('E_INTERNAL', `native scanner: "${rel}" has an unknown kind`);
    case 'non-utf8-name':
      return nonUtf8(r.path.subarray(input.root.length + 1).toString('latin1'), 'name');
    case 'non-utf8-target':
      return nonUtf8(rel, 'target');
    case 'vanished':
      return vanished(rel, osError(r.errno, abs));
    default:
      return osError(r.errno, abs);
  }
}

/** The records of native/walk.c writeRecord: 32 bytes of doubles, 24 of u32, then path and target padded to 8. */
function decodeTouched(buf: Buffer): RawEntry[] {
  let aligned = buf;
  if (buf.byteOffset % 8 !== 0) {
    aligned = Buffer.allocUnsafeSlow(buf.length);
    buf.copy(aligned);
  }
  const out: RawEntry[] = [];
  let o = 0;
  while (o < aligned.length) {
    const d = new Float64Array(aligned.buffer, aligned.byteOffset + o, 4);
    const u = new Uint32Array(aligned.buffer, aligned.byteOffset + o + 32, 6);
    const pathLen = u[2]!;
    const targetLen = u[3]!;
    const body = pathLen + (targetLen === 0xffffffff ? 0 : targetLen);
    const at = o + 56;
    out.push({
      path: aligned.toString('utf8', at, at + pathLen),
      row: u[1]! | 0,
      kind: u[4]! as RawEntry['kind'],
      ino: d[0]!,
      size: d[1]!,
      mtimeMs: d[2]!,
      ctimeMs: d[3]!,
      mode: u[0]!,
      target: targetLen === 0xffffffff ? null : aligned.toString('utf8', at + pathLen, at + body),
    });
    o = at + ((body + 7) & ~7);
  }
  return out;
}

/** The stat walk by the native scanner: the same RawScan as walkWithIndex gives. */
export function nativeWalk(addon: NativeAddon, input: WalkInput, threads: number): RawScan {
  const startedAtMs = Date.now();
  const c = input.index?.cols ?? null;
  const status = c ? new Uint8Array(c.n) : null;
  const rootStat = new Float64Array(5);
  const r = input.index?.header.root;
  const r0 = addon.scan({
    root: input.root.length > 1 ? input.root.replace(/\/+$/, '') : input.root,
    excludeNames: [...input.excludeNames],
    excludePaths: [...input.excludePaths],
    dirRule: input.dirRule,
    threads,
    rootStat,
    ...(r?.trusted ? { rootKeep: new Float64Array([r.ino, r.mtimeMs, r.ctimeMs]) } : {}),
    ...(c ? { index: c, status: status! } : {}),
    ...(c && input.vouch ? { vouch: input.vouch } : {}),
  });
  if (r0.error !== undefined) throw failure(input, r0);
  return {
    scanner: 'native',
    startedAtMs,
    status,
    touched: decodeTouched(r0.touched),
    root: { ino: rootStat[0]!, size: rootStat[1]!, mtimeMs: rootStat[2]!, ctimeMs: rootStat[3]!, mode: rootStat[4]! },
    entries: r0.entries,
    files: r0.files,
    bytes: r0.bytes,
    dirsRead: r0.dirsRead,
    linked: r0.linked.length ? r0.linked.toString('utf8', 0, r0.linked.length - 1).split('\0') : [],
  };
}
