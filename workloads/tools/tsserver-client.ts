// A minimal tsserver client over the process runner. tsserver reads one JSON request per line on
// stdin and answers with `Content-Length` framed messages on stdout. The runner's long-running
// processes have no stdin, so requests go through a FIFO in the case's scratch directory: the
// child's stdin is redirected from it, and we hold it open read-write (which never blocks on
// Linux), so closing our end is tsserver's EOF.
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import type { LongRunningProcess, ProcessResult, ProcessRunner } from '../types.js';

export interface TsserverMessage {
  seq?: number;
  type: 'response' | 'event' | string;
  command?: string;
  event?: string;
  request_seq?: number;
  success?: boolean;
  body?: any;
}

export interface TsserverDiagnostic {
  code: number;
  text: string;
  category?: string;
}

/**
 * Parse complete `Content-Length: N\r\n\r\n<json>` frames from tsserver's output. The body is the
 * JSON text up to its newline; N counts its UTF-8 bytes plus that newline.
 */
export function parseTsserverFrames(output: string): TsserverMessage[] {
  const messages: TsserverMessage[] = [];
  const header = /Content-Length: (\d+)\r?\n\r?\n/g;
  let m: RegExpExecArray | null;
  while ((m = header.exec(output))) {
    const start = m.index + m[0].length;
    const end = output.indexOf('\n', start);
    if (end < 0) break; // incomplete frame: wait for more output
    const body = output.slice(start, end).replace(/\r$/, '');
    try {
      messages.push(JSON.parse(body) as TsserverMessage);
    } catch {
      /* a frame cut by a decoding boundary is skipped; the request it answers times out typed */
    }
    header.lastIndex = end + 1;
  }
  return messages;
}

export interface TsserverSession {
  /** Send a request; returns its seq. */
  request(command: string, args?: unknown): number;
  /** Resolve with all messages up to and including the `requestCompleted` event of `seq`. */
  waitForCompleted(seq: number, timeoutMs: number, what: string): Promise<TsserverMessage[]>;
  messages(): TsserverMessage[];
  /** Close stdin and stop the process group. */
  close(): Promise<ProcessResult>;
}

export async function startTsserver(
  proc: ProcessRunner,
  options: { root: string; scratchDir: string; tsserverJs: string; timeoutMs: number },
): Promise<TsserverSession> {
  const fifo = join(options.scratchDir, 'tsserver.stdin');
  const mk = await proc.run('mkfifo', [fifo], { cwd: options.scratchDir, timeoutMs: options.timeoutMs });
  if (mk.exitCode !== 0) throw new PdbError('E_STEP_FAILED', `could not create the tsserver request pipe (mkfifo exited ${mk.exitCode})`);
  const fd = openSync(fifo, constants.O_RDWR);
  let child: LongRunningProcess;
  try {
    child = proc.start('sh', ['-c', 'exec node "$0" --disableAutomaticTypingAcquisition < "$1"', options.tsserverJs, fifo], {
      cwd: options.root,
    });
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  let seq = 0;
  let closed = false;
  return {
    request(command, args) {
      seq += 1;
      writeSync(fd, `${JSON.stringify({ seq, type: 'request', command, arguments: args })}\n`);
      return seq;
    },
    async waitForCompleted(requestSeq, timeoutMs, what) {
      const done = (msgs: TsserverMessage[]) =>
        msgs.some((x) => x.type === 'event' && x.event === 'requestCompleted' && x.body?.request_seq === requestSeq);
      await child.waitForOutput((out) => done(parseTsserverFrames(out)), timeoutMs, what);
      const all = parseTsserverFrames(child.output());
      const end = all.findIndex((x) => x.type === 'event' && x.event === 'requestCompleted' && x.body?.request_seq === requestSeq);
      return all.slice(0, end + 1);
    },
    messages: () => parseTsserverFrames(child.output()),
    async close() {
      if (!closed) {
        closed = true;
        closeSync(fd);
      }
      return child.stop();
    },
  };
}

/** The semantic diagnostics of `file` in the last `semanticDiag` event among `messages`. */
export function lastSemanticDiag(messages: TsserverMessage[], file: string): TsserverDiagnostic[] | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.type === 'event' && m.event === 'semanticDiag' && m.body?.file === file)
      return (m.body.diagnostics ?? []) as TsserverDiagnostic[];
  }
  return null;
}
