// How the reports print numbers: one home for every formatter, so the Markdown, the HTML, the
// gate's findings and the answer print a ratio or a rate the same way. '-' stands for no value.

export function fmtMs(x: number | null | undefined): string {
  if (x === null || x === undefined) return '-';
  if (x >= 10000) return x.toFixed(0);
  if (x >= 100) return x.toFixed(1);
  return x.toFixed(2);
}

export function fmtRatio(x: number | null | undefined): string {
  return x === null || x === undefined ? '-' : x.toFixed(3);
}

export function fmtP(p: number | null | undefined): string {
  if (p === null || p === undefined) return '-';
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

export function fmtPct(x: number | null | undefined): string {
  if (x === null || x === undefined) return '-';
  return `${(x * 100).toFixed(x < 0.01 && x > 0 ? 2 : 1)}%`;
}
