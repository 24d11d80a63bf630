import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { PdbError, toPdbError } from '../errors.js';
import { runFsTask, type FsTask, type FsTaskResult } from './fs-worker.js';

/** The young generation of an fs worker, in MB (V8's default is sized for a program's main thread). */
const WORKER_YOUNG_MB = 8;

/** One item's answer from a worker. */
export type FsResult = { digest: string; size: number; installed?: boolean; sig?: string };

type Pending = { resolve: (r: FsTaskResult) => void; reject: (e: unknown) => void };

/**
 * A small pool of worker threads for hashing and copying. Below `inlineBelow` items the work runs
 * on the calling thread, because starting a worker (~30 ms) costs more than a few files.
 */
export class FsPool {
  private workers: Worker[] = [];
  private idle: Worker[] = [];
  /** Tasks waiting for a worker, each made only when it is sent (a batch's items exist while it runs). */
  private queue: Array<{ id: number; make: () => FsTask }> = [];
  private pending = new Map<number, Pending>();
  private nextId = 1;
  readonly size: number;
  private readonly umask = process.umask();

  constructor(size = Math.max(2, Math.min(4, availableParallelism()))) {
    this.size = size;
  }

  /** node:worker_threads, loaded the first time a batch goes to a worker (small scans never need it). */
  private workerClass: typeof Worker | null = null;

  private spawn(): void {
    while (this.workers.length < this.size) {
      // A worker's garbage is small strings and results; the default young generation (tens of MB
      // per worker) is RSS that a first import of a large tree carries beside its walk.
      const w = new this.workerClass!(new URL('./fs-worker-thread.js', import.meta.url), {
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB },
      });
      w.on('message', (msg: { id: number; result: FsTaskResult }) => {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        this.release(w);
        p?.resolve(msg.result);
      });
      w.on('error', (err) => {
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
      w.unref();
      this.workers.push(w);
      this.idle.push(w);
    }
  }

  private release(w: Worker): void {
    const next = this.queue.shift();
    if (next) this.send(w, next.id, next.make);
    else {
      this.idle.push(w);
      if (this.pending.size === 0) for (const x of this.workers) x.unref();
    }
  }

  /** Make the task and hand it to `w`; a task that cannot be made fails its own promise, and `w` takes the next. */
  private send(w: Worker, id: number, make: () => FsTask): void {
    let task: FsTask;
    try {
      task = make();
    } catch (err) {
      const p = this.pending.get(id);
      this.pending.delete(id);
      p?.reject(err);
      this.release(w);
      return;
    }
    w.postMessage({ id, task, umask: this.umask });
  }

  private submit(make: () => FsTask): Promise<FsTaskResult> {
    this.spawn();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      for (const x of this.workers) x.ref();
      const w = this.idle.shift();
      if (w) this.send(w, id, make);
      else this.queue.push({ id, make });
    });
  }

  /** Run a task over `items` split into batches; results come back in item order. */
  async map<T>(
    items: T[],
    makeTask: (batch: T[]) => FsTask,
    options: { inlineBelow?: number; batchSize?: number; onBatch?: (batch: T[]) => void } = {},
  ): Promise<Array<FsResult | null>> {
    const out: Array<FsResult | null> = new Array(items.length);
    await this.each(items, makeTask, (i, r) => (out[i] = r), options);
    return out;
  }

  /**
   * Run a task over `items` split into batches, handing each result to `onResult` with its item's
   * index as its batch comes back: nothing is kept here, so a caller that keeps less than the
   * results (columns of digests) never holds them all. Fails with the first failed task.
   */
  async each<T>(
    items: T[],
    makeTask: (batch: T[]) => FsTask,
    onResult: (index: number, result: FsResult | null) => void,
    options: { inlineBelow?: number; batchSize?: number; onBatch?: (batch: T[]) => void } = {},
  ): Promise<void> {
    const inlineBelow = options.inlineBelow ?? 48;
    const batchSize = options.batchSize ?? Math.max(8, Math.min(256, Math.ceil(items.length / (this.size * 8))));
    const starts: number[] = [];
    for (let i = 0; i < items.length; i += batchSize) starts.push(i);
    let failed: { start: number; error: PdbError } | null = null;
    const done = (start: number, r: FsTaskResult) => {
      if (!r.ok) {
        if (!failed || start < failed.start) failed = { start, error: taskError(r.error) }; // the first in item order, as map reads them
        return;
      }
      options.onBatch?.(items.slice(start, start + batchSize));
      r.results.forEach((x, k) => onResult(start + k, x));
    };
    if (items.length < inlineBelow) {
      for (const s of starts) done(s, runFsTask(makeTask(items.slice(s, s + batchSize)), this.umask));
    } else {
      this.workerClass ??= (await import('node:worker_threads')).Worker;
      await Promise.all(starts.map((s) => this.submit(() => makeTask(items.slice(s, s + batchSize))).then((r) => done(s, r))));
    }
    if (failed) throw (failed as { error: PdbError }).error;
  }

  async close(): Promise<void> {
    const ws = this.workers;
    this.workers = [];
    this.idle = [];
    await Promise.all(ws.map((w) => w.terminate()));
  }
}

/** The typed error of a failed task; E_OBJECT_CORRUPT and E_OBJECT_MISSING keep the worker's error (path, object) as cause. */
function taskError(error: { message: string; code?: string; path?: string; object?: string }): PdbError {
  const e = Object.assign(new Error(error.message), { code: error.code, path: error.path, object: error.object });
  switch (error.code) {
    case 'ECHANGED': // the worker read a file twice (hash, then install) and got different bytes
      return new PdbError('E_SOURCE_CHANGED', `${error.message}; stop writers in the tree and try again`, { cause: e });
    case 'ECORRUPT':
      return new PdbError('E_OBJECT_CORRUPT', error.message, { cause: e });
    case 'EOBJMISSING':
      return new PdbError('E_OBJECT_MISSING', error.message, { cause: e });
    default:
      return toPdbError(e, 'E_IO', { path: error.path });
  }
}

let shared: FsPool | undefined;
export function sharedFsPool(): FsPool {
  shared ??= new FsPool();
  return shared;
}
