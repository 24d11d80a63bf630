// Just enough HTTP and WebSocket (RFC 6455, text frames) to watch a Vite dev server's HMR
// channel from Node 20, whose global WebSocket needs --experimental-websocket. No Origin header
// is sent: Vite checks its WebSocket token only for requests that carry one.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { PdbError } from '../../model/errors.js';

/** A TCP port that was free a moment ago on 127.0.0.1 (the server is started with --strictPort, so a race fails loudly). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export function httpGet(port: number, path: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', timeout: timeoutMs, headers: { accept: '*/*' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new PdbError('E_TIMEOUT', `GET ${path} got no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export interface HmrSocket {
  /** Resolve with the first message (parsed JSON) for which `predicate` holds, counting messages already received. */
  waitFor(predicate: (msg: any) => boolean, timeoutMs: number, what: string): Promise<any>;
  messages(): any[];
  close(): void;
}

/** Decode complete server frames (unmasked) from `buf`; returns text payloads and the unread rest. */
export function decodeFrames(buf: Buffer): { texts: string[]; closed: boolean; pings: Buffer[]; rest: Buffer } {
  const texts: string[] = [];
  const pings: Buffer[] = [];
  let closed = false;
  let off = 0;
  let partial: Buffer[] = [];
  while (buf.length - off >= 2) {
    const b0 = buf[off]!;
    const b1 = buf[off + 1]!;
    let len = b1 & 0x7f;
    let head = 2;
    if (len === 126) {
      if (buf.length - off < 4) break;
      len = buf.readUInt16BE(off + 2);
      head = 4;
    } else if (len === 127) {
      if (buf.length - off < 10) break;
      len = Number(buf.readBigUInt64BE(off + 2));
      head = 10;
    }
    const masked = (b1 & 0x80) !== 0;
    const maskLen = masked ? 4 : 0;
    if (buf.length - off < head + maskLen + len) break;
    let payload = buf.subarray(off + head + maskLen, off + head + maskLen + len);
    if (masked) {
      const mask = buf.subarray(off + head, off + head + 4);
      payload = Buffer.from(payload.map((x, i) => x ^ mask[i % 4]!));
    }
    const fin = (b0 & 0x80) !== 0;
    const opcode = b0 & 0x0f;
    if (opcode === 0x1 || opcode === 0x0) {
      partial.push(payload);
      if (fin) {
        texts.push(Buffer.concat(partial).toString('utf8'));
        partial = [];
      }
    } else if (opcode === 0x8) closed = true;
    else if (opcode === 0x9) pings.push(payload);
    off += head + maskLen + len;
  }
  return { texts, closed, pings, rest: buf.subarray(off) };
}

function encodeClientFrame(opcode: number, payload: Buffer): Buffer {
  // Client frames must be masked (RFC 6455 5.3); payloads here are tiny control frames.
  const mask = randomBytes(4);
  const head = Buffer.from([0x80 | opcode, 0x80 | payload.length]);
  return Buffer.concat([head, mask, Buffer.from(payload.map((x, i) => x ^ mask[i % 4]!))]);
}

/** Open `ws://127.0.0.1:port/PATH` with the given subprotocol (Vite: `vite-hmr` at `/`; Next.js: none, at `/_next/hmr`). */
export function connectHmr(port: number, subprotocol: string | null, timeoutMs: number, path = '/'): Promise<HmrSocket> {
  return new Promise((resolve, reject) => {
    const key = randomBytes(16).toString('base64');
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      timeout: timeoutMs,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Version': '13',
        ...(subprotocol === null ? {} : { 'Sec-WebSocket-Protocol': subprotocol }),
      },
    });
    req.on('timeout', () => req.destroy(new PdbError('E_TIMEOUT', `the HMR WebSocket did not open within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      reject(new PdbError('E_STEP_FAILED', `the HMR WebSocket upgrade was refused with HTTP ${res.statusCode}`));
    });
    req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
      socket.setTimeout(0);
      const received: any[] = [];
      const waiters = new Set<() => void>();
      let pending = head;
      let ended = false;
      const onData = (chunk: Buffer) => {
        const { texts, closed, pings, rest } = decodeFrames(Buffer.concat([pending, chunk]));
        pending = rest;
        for (const p of pings) socket.write(encodeClientFrame(0xa, p));
        for (const t of texts) {
          try {
            received.push(JSON.parse(t));
          } catch {
            received.push({ type: 'non-json', text: t });
          }
        }
        if (closed) ended = true;
        for (const w of [...waiters]) w();
      };
      socket.on('data', onData);
      socket.on('close', () => {
        ended = true;
        for (const w of [...waiters]) w();
      });
      socket.on('error', () => undefined); // surfaced as `ended` to waiters
      if (head.length) onData(Buffer.alloc(0));
      resolve({
        messages: () => received,
        waitFor(predicate, waitMs, what) {
          return new Promise((res, rej) => {
            const check = () => {
              const hit = received.find(predicate);
              if (hit !== undefined) finish(null, hit);
              else if (ended) finish(new PdbError('E_STEP_FAILED', `the HMR WebSocket closed before ${what}`));
            };
            const timer = setTimeout(() => finish(new PdbError('E_TIMEOUT', `no ${what} within ${waitMs} ms`)), waitMs);
            const finish = (err: PdbError | null, value?: unknown) => {
              clearTimeout(timer);
              waiters.delete(check);
              if (err) rej(err);
              else res(value);
            };
            waiters.add(check);
            check();
          });
        },
        close() {
          if (!socket.destroyed) {
            socket.write(encodeClientFrame(0x8, Buffer.alloc(0)));
            socket.destroy();
          }
        },
      });
    });
    req.end();
  });
}
