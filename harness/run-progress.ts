// Progress for long runs: one rewritten line on a TTY, plain lines otherwise.

export interface ProgressEvent {
  kind: 'case-start' | 'case-end' | 'note';
  index?: number;
  total?: number;
  caseId?: string;
  backend?: string;
  workload?: string;
  outcome?: string;
  wallMs?: number;
  message?: string;
}

export type ProgressSink = (e: ProgressEvent) => void;

const fmt = (ms: number): string => {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
};

export function createProgress(stream: NodeJS.WriteStream = process.stderr, now: () => number = () => performance.now()): ProgressSink {
  const t0 = now();
  const tty = stream.isTTY === true;
  let doneMs = 0;
  let done = 0;
  let ticker: NodeJS.Timeout | null = null;
  let line = '';
  const draw = () => stream.write(`\r\x1b[2K${line.replace('{elapsed}', fmt(now() - t0))}`);
  return (e) => {
    switch (e.kind) {
      case 'case-start': {
        const elapsed = now() - t0;
        const eta = done > 0 && e.total && e.index ? ` eta ${fmt((doneMs / done) * (e.total - e.index + 1))}` : '';
        const head = `case ${e.index} of ${e.total}: ${e.backend} x ${e.workload} (${e.caseId})`;
        if (tty) {
          line = `${head}, elapsed {elapsed}${eta}`;
          draw();
          ticker ??= setInterval(draw, 1000);
          ticker.unref();
        } else stream.write(`${head}, elapsed ${fmt(elapsed)}${eta}\n`);
        break;
      }
      case 'case-end': {
        done++;
        doneMs += e.wallMs ?? 0;
        const msg = `case ${e.index} of ${e.total}: ${e.backend} x ${e.workload} ${e.outcome} in ${fmt(e.wallMs ?? 0)}${e.message ? ` (${e.message})` : ''}`;
        if (tty) {
          if (ticker) clearInterval(ticker);
          ticker = null;
          stream.write(`\r\x1b[2K${e.outcome === 'ok' ? '' : `${msg}\n`}`);
        } else stream.write(`${msg}\n`);
        break;
      }
      case 'note':
        if (tty) stream.write(`\r\x1b[2K${e.message}\n`);
        else stream.write(`${e.message}\n`);
        break;
      default: {
        const never: never = e.kind;
        throw new Error(`unknown progress event ${String(never)}`);
      }
    }
  };
}

export const silentProgress: ProgressSink = () => {};
