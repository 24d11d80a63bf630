import { toPdbError, type PdbErrorCode } from '../model/errors.js';

/** Print a result: JSON when asked, text otherwise. */
export function emit(json: boolean, value: unknown, text: () => string): void {
  if (json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else {
    const t = text();
    if (t) process.stdout.write(t.endsWith('\n') ? t : `${t}\n`);
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
  if (json) process.stdout.write(`${JSON.stringify({ error: e.toJSON() }, null, 2)}\n`);
  else {
    process.stderr.write(`pdb-env: ${e.code}: ${e.message}\n`);
    if (e.hint) process.stderr.write(`  ${e.hint}\n`);
    // A stack only for a real bug, and the original one (the wrapper's frames say nothing).
    if (e.code === 'E_INTERNAL') {
      const original = e.cause instanceof Error ? e.cause : e;
      if (original.stack) process.stderr.write(`${original.stack}\n`);
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
