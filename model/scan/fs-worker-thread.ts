// The entry of an fs pool worker thread: runs each task it is sent (fs-worker.ts) and posts the
// result back. Kept apart so that the main thread, which runs small batches inline, never loads
// node:worker_threads for them.
import { parentPort } from 'node:worker_threads';
import { runFsTask, type FsTask } from './fs-worker.js';

if (parentPort) {
  const port = parentPort;
  port.on('message', (msg: { id: number; task: FsTask; umask: number }) => {
    port.postMessage({ id: msg.id, result: runFsTask(msg.task, msg.umask) });
  });
}
