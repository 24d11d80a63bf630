// Progress of a long operation (files and bytes done), reported by the model and the session
// service to whoever asked; the CLI draws it on a terminal, nothing else ever prints it.

export interface ProgressEvent {
  /** What is being done: 'scan' (stat walk), 'hash', 'copy', 'clone'. */
  phase: 'scan' | 'hash' | 'copy' | 'clone';
  files: number;
  totalFiles: number;
  bytes: number;
  totalBytes: number;
}

export type ProgressFn = (p: ProgressEvent) => void;

/** Counts files and bytes of finished batches and reports the running totals. */
export function progressCounter(
  phase: ProgressEvent['phase'],
  totalFiles: number,
  totalBytes: number,
  report: ProgressFn | undefined,
): (files: number, bytes: number) => void {
  let files = 0;
  let bytes = 0;
  return (f, b) => {
    files += f;
    bytes += b;
    report?.({ phase, files, totalFiles, bytes, totalBytes });
  };
}

/** 12.3 MB, 456 kB, 789 B (decimal units, as du --si and df -H print them). */
export function formatBytes(bytes: number): string {
  const a = Math.abs(bytes);
  const s =
    a >= 1e9 ? `${(a / 1e9).toFixed(2)} GB` : a >= 1e6 ? `${(a / 1e6).toFixed(1)} MB` : a >= 1e3 ? `${(a / 1e3).toFixed(0)} kB` : `${a} B`;
  return bytes < 0 ? `-${s}` : s;
}
