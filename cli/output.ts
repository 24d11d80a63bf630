import { PdbError, toPdbError } from '../model/errors.js';

/** Print a result: JSON when asked, text otherwise. */
export function emit(json: boolean, value: unknown, text: () => string): void {
  if (json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else {
    const t = text();
    if (t) process.stdout.write(t.endsWith('\n') ? t : `${t}\n`);
  }
}

/** Print an error with its stable code; JSON errors are `{ "error": { code, message, hint } }`. */
export function emitError(json: boolean, err: unknown): number {
  const e = toPdbError(err);
  if (json) process.stdout.write(`${JSON.stringify({ error: e.toJSON() }, null, 2)}\n`);
  else {
    process.stderr.write(`pdb-env: ${e.code}: ${e.message}\n`);
    if (e.hint) process.stderr.write(`  ${e.hint}\n`);
    if (e.code === 'E_INTERNAL' && e.stack) process.stderr.write(`${e.stack}\n`);
  }
  return e instanceof PdbError && e.code === 'E_USAGE' ? 2 : 1;
}

export function table(rows: string[][]): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

export function short(digest: string | null | undefined): string {
  return digest ? digest.slice(0, 19) : '-';
}
