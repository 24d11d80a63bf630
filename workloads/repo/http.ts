// HTTP on the case session's port: a free port for the case, one GET, and the two waits a step
// needs (a status, and a response that differs from one seen before). A server gives no event when
// it starts listening, so these poll, every POLL_MS, until the step's deadline.
import { request } from 'node:http';
import { createServer } from 'node:net';
import { PdbError } from '../../model/errors.js';

export const POLL_MS = 50;

/** A port nothing listens on now (the kernel's choice for port 0 on loopback). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new PdbError('E_IO', 'no free port on 127.0.0.1'))));
    });
  });
}

export interface HttpResponse {
  status: number;
  body: string;
}

/** GET http://127.0.0.1:PORT/PATH; null when nothing answers (yet). */
export function httpGet(port: number, path: string, timeoutMs = 2000): Promise<HttpResponse | null> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null)); // refused or reset: the server is not up (yet)
    req.end();
  });
}

export interface PollOptions {
  port: number;
  path: string;
  /** Milliseconds left for the wait. */
  timeoutMs: number;
  /** What is waited for, for messages. */
  what: string;
  /** The process behind the port stopped: the wait fails at once. */
  exited(): boolean;
  signal?: AbortSignal;
}

/** Poll until `accept(response)`; E_TIMEOUT at the deadline, E_STEP_FAILED if the process exits first. */
export async function pollHttp(o: PollOptions, accept: (r: HttpResponse | null) => boolean): Promise<HttpResponse | null> {
  const deadline = performance.now() + o.timeoutMs;
  for (;;) {
    const left = deadline - performance.now();
    const r = await httpGet(o.port, o.path, Math.max(1, Math.min(2000, left)));
    if (accept(r)) return r;
    if (o.exited()) throw new PdbError('E_STEP_FAILED', `the process exited before ${o.what}`);
    if (o.signal?.aborted) throw new PdbError('E_TIMEOUT', `stopped while waiting for ${o.what}`);
    if (performance.now() + POLL_MS > deadline) throw new PdbError('E_TIMEOUT', `no ${o.what} within ${o.timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
