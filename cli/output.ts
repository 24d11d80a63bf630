import { writeSync } from 'node:fs';
import { osErrorCode, toPdbError, type PdbErrorCode } from '../model/errors.js';

let direct = false;

/**
 * Print with write(2) on fds 1 and 2 from now on instead of through process.stdout and
 * process.stderr, whose first use makes a stream (for a pipe, a socket with streams behind it):
 * for the cheap path (cli/cheap-path.ts), where nothing else in the process prints.
 */
export function writeDirectly(): void {
  direct = true;
}

/** Where output goes instead of fds 1 and 2 while a daemon runs a client's command (cli/daemon/server.ts). */
let sink: ((fd: 1 | 2, text: string) => void) | null = null;

/** Send what commands print to `to` (null: back to fds 1 and 2). */
export function captureOutput(to: ((fd: 1 | 2, text: string) => void) | null): void {
  sink = to;
}

/** Print `text` on fd 1 or 2 (or to the daemon's client), as emit and emitError do. */
export function put(fd: 1 | 2, text: string): void {
  if (sink) {
    sink(fd, text);
    return;
  }
  const stream = () => (fd === 1 ? process.stdout : process.stderr);
  if (!direct) {
    stream().write(text);
    return;
  }
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(fd, buf, off);
  } catch (err) {
    const code = osErrorCode(err);
    // A reader that went away is not an error of the command (main.ts's rule); a descriptor left
    // non-blocking by whoever shares it gets the rest through the stream, which waits.
    if (code === 'EPIPE') return;
    if (code === 'EAGAIN') stream().write(buf.subarray(off));
    else throw err;
  }
}

/** Print a result: JSON when asked, text otherwise. */
export function emit(json: boolean, value: unknown, text: () => string): void {
  if (json) put(1, `${JSON.stringify(value, null, 2)}\n`);
  else {
    const t = text();
    if (t) put(1, t.endsWith('\n') ? t : `${t}\n`);
  }
}

/**
 * Exit statuses that mean something to a shell: 2 is bad usage only; a program that cannot be
 * started is 127 (not found) or 126 (not executable), as sh reports them; 130 is an interrupt.
 */
const EXIT_STATUS: Partial<Record<PdbErrorCode, number>> = {
  E_USAGE: 2,
  E_COMMAND_NOT_FOUND: 127,
  E_COMMAND_NOT_EXECUTABLE: 126,
  E_INTERRUPTED: 130,
};

export function exitStatus(code: PdbErrorCode): number {
  return EXIT_STATUS[code] ?? 1;
}

/** Print an error with its stable code; JSON errors are `{ "error": { code, message, hint } }`. Returns the exit status. */
export function emitError(json: boolean, err: unknown): number {
  const e = toPdbError(err);
  if (json) put(1, `${JSON.stringify({ error: e.toJSON() }, null, 2)}\n`);
  else {
    put(2, `pdb-env: ${e.code}: ${e.message}\n`);
    if (e.hint) put(2, `  ${e.hint}\n`);
    // A stack only for a real bug, and the original one (the wrapper's frames say nothing).
    if (e.code === 'E_INTERNAL') {
      const original = e.cause instanceof Error ? e.cause : e;
      if (original.stack) put(2, `${original.stack}\n`);
    }
  }
  return exitStatus(e.code);
}

export function table(rows: string[][]): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

export function short(digest: string | null | undefined): string {
  return digest ? digest.slice(0, 19) : '-';
}
