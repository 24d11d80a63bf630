// The file-operation matrix's deterministic inputs: its parameters, the fixed base files, the
// paths and bytes the operations use, and the large file's bytes as a pure function of its size.
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';

export const MiB = 1024 * 1024;

/** One MiB (or less, for the tail) of pseudo-random bytes, a pure function of (stream, index). */
export function pseudoRandomChunk(stream: number, index: number, size = MiB): Buffer {
  const words = new Uint32Array(Math.ceil(size / 4));
  let x = (Math.imul(index + 1, 0x9e3779b1) ^ Math.imul(stream + 7, 0x85ebca6b)) >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    words[i] = x;
  }
  return Buffer.from(words.buffer, 0, size);
}

function* largeChunks(stream: number, bytes: number): Generator<Buffer> {
  for (let i = 0, left = bytes; left > 0; i++, left -= MiB) yield pseudoRandomChunk(stream, i, Math.min(MiB, left));
}

export const LARGE_STREAM = 1;
export const APPEND_STREAM = 2;
export const APPEND_BYTES = MiB;

export const smallContent = (i: number): string => `small file ${i}\n`;
export const smallEdited = (i: number): string => `small file ${i}, edited in the session\n`;
export const smallPath = (i: number): string => `tree/d${String(Math.floor(i / 100)).padStart(4, '0')}/f${String(i).padStart(6, '0')}.txt`;
export const newSmallPath = (i: number): string =>
  `generated/g${String(Math.floor(i / 100)).padStart(4, '0')}/n${String(i).padStart(6, '0')}.txt`;

export interface FileopsParams {
  smallFiles: number;
  largeFileBytes: number;
  newSmallFiles: number;
}

export const FILEOPS_DEFAULTS = {
  /** Small files in the base tree (the full plan uses at least 20,000). */
  smallFiles: 20_000,
  /** Bytes of the large base file (the full plan uses at least 256 MiB). */
  largeFileBytes: 256 * MiB,
  /** Small files the session writes in a fresh nested tree. */
  newSmallFiles: 2_000,
};

export function readParams(params: Record<string, unknown>): FileopsParams {
  const p = { ...FILEOPS_DEFAULTS, ...params } as unknown as FileopsParams;
  for (const k of ['smallFiles', 'largeFileBytes', 'newSmallFiles'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 0)
      throw new PdbError('E_PLAN_INVALID', `fileops: ${k} must be a non-negative integer, got ${String(p[k])}`);
  }
  return p;
}

/** Fixed base files the operations act on. */
export const BASE_FILES: Record<string, string> = {
  'README.md': '# fileops fixture\n\nA deterministic tree for the pdb-env file-operation matrix.\n',
  'src/edit-me.txt': 'original line 1\noriginal line 2\n',
  'src/append-me.log': 'log line 0\n',
  'src/delete-me.txt': 'this file is deleted by the session\n',
  'src/rename-me.txt': 'this file is renamed by the session\n',
  'src/keep.txt': 'this file stays as it is\n',
  'src/moving-dir/a.txt': 'a\n',
  'src/moving-dir/deep/b.txt': 'b\n',
  'doomed-dir/x.txt': 'x\n',
  'doomed-dir/sub/y.txt': 'y\n',
  'bin/tool.sh': '#!/bin/sh\necho tool\n',
  'bin/was-exec.sh': '#!/bin/sh\necho was exec\n',
};
export const TRUNCATE_PATH = 'src/truncate-me.bin';
export const TRUNCATE_BYTES = 64 * 1024;
export const TRUNCATE_TO = 100;
export const LARGE_PATH = 'large/blob.bin';

export const EDITED = 'edited line 1\nedited line 2\nedited line 3\n';
export const APPENDED_LOG = 'log line 1, appended\n';
export const REENTRY_MARKER = 'reentry ok: the second process saw the session and its own earlier edit\n';

/** The small files the edit step rewrites: every 100th. */
export const editEvery = (p: FileopsParams): number[] => {
  const out: number[] = [];
  for (let i = 0; i < p.smallFiles; i += 100) out.push(i);
  return out;
};

/** Write (or append) a large pseudo-random stream, one MiB at a time. */
export async function writeLarge(path: string, stream: number, bytes: number, flag: 'w' | 'a'): Promise<void> {
  const fh = await open(path, flag);
  try {
    for (const chunk of largeChunks(stream, bytes)) await fh.write(chunk);
  } finally {
    await fh.close();
  }
}

function hashChunks(chunks: Iterable<Buffer>): { digest: Digest; size: number } {
  const h = createHash('sha256');
  let size = 0;
  for (const c of chunks) {
    h.update(c);
    size += c.length;
  }
  return { digest: `sha256:${h.digest('hex')}`, size };
}

// Expected large-file digests depend only on the parameters; computed once per size.
const largeDigests = new Map<number, { base: { digest: Digest; size: number }; appended: { digest: Digest; size: number } }>();

/** The large file's digest and size in the base and after the append step. */
export function largeDigest(bytes: number) {
  let d = largeDigests.get(bytes);
  if (!d) {
    const base = hashChunks(largeChunks(LARGE_STREAM, bytes));
    const appended = hashChunks(
      (function* () {
        yield* largeChunks(LARGE_STREAM, bytes);
        yield* largeChunks(APPEND_STREAM, APPEND_BYTES);
      })(),
    );
    d = { base, appended };
    largeDigests.set(bytes, d);
  }
  return d;
}
