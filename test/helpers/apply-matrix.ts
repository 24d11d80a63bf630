// The file-operation matrix, run inside a session root (cwd) through `SessionService.run`.
// `node apply-matrix.js first` does the main pass; `node apply-matrix.js reentry` the re-entry pass.
// Every operation is deterministic, so any backend must end with the oracle's exact Snapshot.
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  openSync,
  closeSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';

const pass = process.argv[2];

function pattern(size: number, seed: number): Buffer {
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

if (pass === 'first') {
  // create
  mkdirSync('new', { recursive: true });
  writeFileSync('new/created.txt', 'created in the session\n');
  // read (its effect is recorded, so a wrong read shows up in the Snapshot)
  writeFileSync('new/read-result.txt', `a.txt had ${readFileSync('src/a.txt', 'utf8').length} chars\n`);
  // edit in place (same inode: a backend sharing inodes with the base leaks this)
  writeFileSync('src/a.txt', 'edited in place\n');
  // append
  appendFileSync('log.txt', 'appended line\n');
  // truncate
  truncateSync('trunc.txt', 3);
  // delete a file and a directory
  unlinkSync('src/delete-me.txt');
  rmSync('olddir', { recursive: true });
  // rename a file and a directory that exist in the base
  renameSync('src/b.txt', 'src/b-renamed.txt');
  renameSync('lib', 'lib2');
  // relative symlink
  mkdirSync('links', { recursive: true });
  symlinkSync('../src/a.txt', 'links/a-link');
  // exec bit on and off
  chmodSync('scripts/run.sh', 0o755);
  chmodSync('bin/tool', 0o644);
  // nested directories
  mkdirSync('deep/a/b/c/d', { recursive: true });
  writeFileSync('deep/a/b/c/d/leaf.txt', 'leaf\n');
  mkdirSync('empty/dir', { recursive: true });
  // large file: overwrite 64 KiB in the middle of a shared 6 MiB file, and add a new 3 MiB file
  const fd = openSync('large/big.bin', 'r+');
  writeSync(fd, pattern(64 * 1024, 7), 0, 64 * 1024, 3 * 1024 * 1024);
  closeSync(fd);
  writeFileSync('large/new-big.bin', pattern(3 * 1024 * 1024, 11));
  // many small files: edit 50, delete 10, add 100
  for (let i = 0; i < 50; i++) writeFileSync(`many/f${String(i).padStart(4, '0')}.txt`, `edited ${i}\n`);
  for (let i = 50; i < 60; i++) unlinkSync(`many/f${String(i).padStart(4, '0')}.txt`);
  mkdirSync('many/added', { recursive: true });
  for (let i = 0; i < 100; i++) writeFileSync(`many/added/n${i}.txt`, `new ${i}\n`);
} else if (pass === 'reentry') {
  // re-entry: a later command in the same session sees the first pass and builds on it
  const before = readFileSync('new/created.txt', 'utf8');
  writeFileSync('new/created.txt', `${before}second visit\n`);
  appendFileSync('log.txt', 'appended on re-entry\n');
  renameSync('lib2/util.js', 'lib2/util-moved.js');
} else {
  console.error('usage: apply-matrix first|reentry');
  process.exit(2);
}
