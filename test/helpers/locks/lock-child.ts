// A real process that takes a lock or a lease for the lock and lease tests. Protocol on stdio:
// it prints "ready", waits for "go" on stdin, prints "won" or "busy <holder pid>", then holds
// what it won until stdin closes (or it is killed) and exits.
import { createInterface } from 'node:readline';
import { acquireLease } from '../../../sessions/locks/lease.js';
import { tryLock } from '../../../sessions/locks/lock.js';

const [mode, path] = process.argv.slice(2) as [string, string];
const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

async function take(): Promise<{ release(): Promise<void> } | string> {
  if (mode === 'lock') {
    const r = await tryLock(path, { kind: 'update', purpose: 'lock-child' });
    return r.lock ?? `busy ${r.holder?.pid ?? '?'}`;
  }
  try {
    return await acquireLease(path, 'child', mode === 'exclusive' ? 'exclusive' : 'writer', 'lock-child');
  } catch (err) {
    return `busy ${(err as Error).message}`;
  }
}

console.log('ready');
await lines.next(); // "go"
const got = await take();
console.log(typeof got === 'string' ? got : 'won');
while (!(await lines.next()).done) {
  /* hold until stdin closes */
}
if (typeof got !== 'string') await got.release();
input.close();
