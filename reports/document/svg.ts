// SVG charts as strings: no DOM, no fonts to fetch, no scripts, so the same markup works inline in
// HTML, as a file next to Markdown, and in a headless browser. Every chart has a <title> for readers.
import type { Comparison, PhaseCell } from '../analysis/report-data.js';

const PALETTE = ['#4b5563', '#2563eb', '#d97706', '#059669', '#7c3aed', '#db2777', '#0891b2', '#65a30d'];
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function backendColor(backend: string, backends: string[]): string {
  const i = backends.indexOf(backend);
  return PALETTE[(i < 0 ? backends.length : i) % PALETTE.length]!;
}

interface Scale {
  (v: number): number;
  ticks: number[];
  format(v: number): string;
}

/** Whether values spanning lo..hi call for a log axis: positive and more than 20x apart. */
export function wantsLog(lo: number, hi: number): boolean {
  return lo > 0 && hi / lo > 20;
}

/** A log or linear scale over lo..hi (log only for positive values); ticks at "nice" values. */
function makeScale(lo: number, hi: number, x0: number, x1: number, log: boolean): Scale {
  const positive = lo > 0;
  const useLog = positive && log;
  let a = lo;
  let b = hi;
  if (a === b) {
    a = a * 0.9;
    b = b * 1.1 || 1;
  }
  let ticks: number[];
  let f: (v: number) => number;
  if (useLog) {
    const la = Math.log10(a) - 0.05;
    const lb = Math.log10(b) + 0.05;
    f = (v) => x0 + ((Math.log10(Math.max(v, 1e-12)) - la) / (lb - la)) * (x1 - x0);
    ticks = [];
    for (let e = Math.floor(la); e <= Math.ceil(lb); e++) {
      for (const m of [1, 2, 5]) {
        const t = m * 10 ** e;
        if (Math.log10(t) >= la && Math.log10(t) <= lb) ticks.push(t);
      }
    }
  } else {
    const pad = (b - a) * 0.05;
    const la = Math.max(positive ? 0 : a - pad, a - pad);
    const lb = b + pad;
    f = (v) => x0 + ((v - la) / (lb - la)) * (x1 - x0);
    const raw = (lb - la) / 5;
    const step = [1, 2, 2.5, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(raw))).find((s) => s >= raw) ?? raw;
    ticks = [];
    for (let t = Math.ceil(la / step) * step; t <= lb; t += step) ticks.push(Number(t.toPrecision(12)));
  }
  const scale = f as Scale;
  scale.ticks = ticks;
  scale.format = (v: number) => (v >= 1000 ? `${Number((v / 1000).toPrecision(3))}k` : `${Number(v.toPrecision(3))}`);
  return scale;
}

function quartiles(values: number[]): { q1: number; q2: number; q3: number } {
  const s = [...values].sort((x, y) => x - y);
  const q = (p: number): number => {
    const h = (s.length - 1) * p;
    const l = Math.floor(h);
    return s[l]! + (h - l) * ((s[Math.min(l + 1, s.length - 1)] ?? s[l]!) - s[l]!);
  };
  return { q1: q(0.25), q2: q(0.5), q3: q(0.75) };
}

/**
 * Per-phase distributions for one testbed and fixture: one panel per phase, one row per backend;
 * each measured case is a dot, the box spans the IQR, the thick bar is the median and the shaded band
 * its order-statistic 95% CI. Warm-up cases are hollow grey dots (shown, not in any statistic). One
 * axis rule for the whole chart: every panel is logarithmic when any panel's data spans more than
 * 20x, linear otherwise, and each panel says which.
 */
export function distributionChart(title: string, cells: PhaseCell[], phases: string[], backends: string[]): string {
  const width = 760;
  const left = 150;
  const right = 24;
  const rowH = 26;
  const panelGap = 34;
  const used = backends.filter((b) => cells.some((c) => c.backend === b && (c.valuesMs.length > 0 || c.warmupValuesMs.length > 0)));
  const panels = phases.filter((p) => cells.some((c) => c.phase === p && (c.valuesMs.length > 0 || c.warmupValuesMs.length > 0)));
  // Each panel: 10 px title gap, the rows, then the tick labels inside panelGap.
  const height = 40 + panels.length * (10 + used.length * rowH + panelGap);
  const spans = panels.map((phase) => {
    const all = cells.filter((c) => c.phase === phase).flatMap((c) => [...c.valuesMs, ...c.warmupValuesMs]);
    return { lo: Math.min(...all), hi: Math.max(...all) };
  });
  const log = spans.some((x) => wantsLog(x.lo, x.hi)) && spans.every((x) => x.lo > 0);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" class="pdb-chart" ${FONT} font-size="12">`,
  );
  out.push(`<title>${escapeXml(title)}</title>`);
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="8" y="20" font-size="14" font-weight="600" fill="#111827">${escapeXml(title)}</text>`);
  let y = 40;
  for (const phase of panels) {
    const pc = cells.filter((c) => c.phase === phase);
    const all = pc.flatMap((c) => [...c.valuesMs, ...c.warmupValuesMs]);
    const scale = makeScale(Math.min(...all), Math.max(...all), left, width - right, log);
    const panelH = used.length * rowH;
    out.push(`<text x="8" y="${y + 4}" font-weight="600" fill="#374151">${escapeXml(phase)} (ms, ${log ? 'log' : 'linear'} scale)</text>`);
    const top = y + 10;
    for (const t of scale.ticks) {
      const x = scale(t).toFixed(1);
      out.push(`<line x1="${x}" y1="${top}" x2="${x}" y2="${top + panelH}" stroke="#e5e7eb"/>`);
      out.push(`<text x="${x}" y="${top + panelH + 12}" text-anchor="middle" fill="#6b7280" font-size="10">${scale.format(t)}</text>`);
    }
    used.forEach((backend, i) => {
      const cy = top + i * rowH + rowH / 2;
      const color = backendColor(backend, backends);
      out.push(`<text x="${left - 8}" y="${cy + 4}" text-anchor="end" fill="#111827">${escapeXml(backend)}</text>`);
      const cell = pc.find((c) => c.backend === backend);
      if (!cell) return;
      if (cell.valuesMs.length >= 2) {
        const { q1, q3 } = quartiles(cell.valuesMs);
        out.push(
          `<rect x="${scale(q1).toFixed(1)}" y="${cy - 8}" width="${Math.max(1, scale(q3) - scale(q1)).toFixed(1)}" height="16" fill="${color}" fill-opacity="0.12" stroke="${color}" stroke-opacity="0.6"/>`,
        );
      }
      const ci = cell.summary.medianCi;
      if (ci)
        out.push(
          `<rect x="${scale(ci.lower).toFixed(1)}" y="${cy - 10}" width="${Math.max(1.5, scale(ci.upper) - scale(ci.lower)).toFixed(1)}" height="20" fill="${color}" fill-opacity="0.25"/>`,
        );
      cell.warmupValuesMs.forEach((v, j) => {
        out.push(`<circle cx="${scale(v).toFixed(1)}" cy="${(cy + jitter(j)).toFixed(1)}" r="3" fill="none" stroke="#9ca3af"/>`);
      });
      cell.valuesMs.forEach((v, j) => {
        out.push(`<circle cx="${scale(v).toFixed(1)}" cy="${(cy + jitter(j)).toFixed(1)}" r="2.6" fill="${color}" fill-opacity="0.75"/>`);
      });
      if (cell.summary.median !== null) {
        const mx = scale(cell.summary.median).toFixed(1);
        out.push(`<line x1="${mx}" y1="${cy - 11}" x2="${mx}" y2="${cy + 11}" stroke="${color}" stroke-width="3"/>`);
      }
      const fails = cell.mismatch + cell.failed + cell.timeout;
      if (fails > 0)
        out.push(`<text x="${width - right}" y="${cy + 4}" text-anchor="end" fill="#b91c1c" font-size="10">${fails} failed</text>`);
    });
    y = top + panelH + panelGap;
  }
  out.push('</svg>');
  return out.join('\n');
}

/** Deterministic vertical jitter so dots with equal values stay visible. */
function jitter(j: number): number {
  return ((j * 7) % 11) - 5;
}

/**
 * Ratio to the baseline with 95% bootstrap intervals, one row per comparison, on a log axis with a
 * line at 1 (no difference) and the policy's threshold only when its candidate is in the chart.
 * "~" marks rows whose paired permutation test is not significant.
 */
export function ratioChart(
  title: string,
  comparisons: Comparison[],
  backends: string[],
  policy?: { backend: string; ratio: number },
): string {
  const rows = comparisons.filter((c) => c.medianRatio !== null);
  const threshold = policy && rows.some((c) => c.backend === policy.backend) ? policy.ratio : undefined;
  const width = 760;
  const left = 290;
  const right = 60;
  const rowH = 22;
  const height = 56 + Math.max(1, rows.length) * rowH + 30;
  const values = rows.flatMap((c) => [c.medianRatio!, c.ci?.lower ?? c.medianRatio!, c.ci?.upper ?? c.medianRatio!]);
  values.push(1);
  if (threshold !== undefined) values.push(threshold);
  const scale = makeScale(Math.min(...values) * 0.9, Math.max(...values) * 1.1, left, width - right, true);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" class="pdb-chart" ${FONT} font-size="12">`,
  );
  out.push(`<title>${escapeXml(title)}</title>`);
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="8" y="20" font-size="14" font-weight="600" fill="#111827">${escapeXml(title)}</text>`);
  const top = 40;
  const bottom = top + Math.max(1, rows.length) * rowH;
  for (const t of scale.ticks) {
    const x = scale(t).toFixed(1);
    out.push(`<line x1="${x}" y1="${top}" x2="${x}" y2="${bottom}" stroke="#e5e7eb"/>`);
    out.push(`<text x="${x}" y="${bottom + 14}" text-anchor="middle" fill="#6b7280" font-size="10">${scale.format(t)}x</text>`);
  }
  const one = scale(1).toFixed(1);
  out.push(`<line x1="${one}" y1="${top - 4}" x2="${one}" y2="${bottom}" stroke="#111827" stroke-dasharray="4 3"/>`);
  out.push(`<text x="${one}" y="${top - 8}" text-anchor="middle" fill="#111827" font-size="10">1 = same as baseline</text>`);
  if (threshold !== undefined) {
    const tx = scale(threshold).toFixed(1);
    out.push(`<line x1="${tx}" y1="${top - 4}" x2="${tx}" y2="${bottom}" stroke="#dc2626" stroke-dasharray="2 2"/>`);
    out.push(
      `<text x="${tx}" y="${bottom + 26}" text-anchor="middle" fill="#dc2626" font-size="10">policy ${threshold} (${escapeXml(policy!.backend)})</text>`,
    );
  }
  if (rows.length === 0) out.push(`<text x="${left}" y="${top + 15}" fill="#6b7280">no paired blocks</text>`);
  rows.forEach((c, i) => {
    const cy = top + i * rowH + rowH / 2;
    const color = backendColor(c.backend, backends);
    out.push(
      `<text x="${left - 10}" y="${cy + 4}" text-anchor="end" fill="#111827">${escapeXml(`${c.backend} · ${c.fixture} · ${c.phase}`)}</text>`,
    );
    if (c.ci) {
      const x1 = scale(c.ci.lower).toFixed(1);
      const x2 = scale(c.ci.upper).toFixed(1);
      out.push(`<line x1="${x1}" y1="${cy}" x2="${x2}" y2="${cy}" stroke="${color}" stroke-width="2"/>`);
      out.push(`<line x1="${x1}" y1="${cy - 5}" x2="${x1}" y2="${cy + 5}" stroke="${color}" stroke-width="2"/>`);
      out.push(`<line x1="${x2}" y1="${cy - 5}" x2="${x2}" y2="${cy + 5}" stroke="${color}" stroke-width="2"/>`);
    }
    const mx = scale(c.medianRatio!).toFixed(1);
    out.push(
      `<rect x="${(Number(mx) - 4).toFixed(1)}" y="${cy - 4}" width="8" height="8" fill="${c.significant ? color : '#ffffff'}" stroke="${color}" stroke-width="1.5"/>`,
    );
    out.push(
      `<text x="${width - right + 6}" y="${cy + 4}" fill="${c.significant ? '#111827' : '#6b7280'}" font-size="11">${c.significant ? c.medianRatio!.toFixed(2) : `~${c.medianRatio!.toFixed(2)}`}</text>`,
    );
  });
  out.push('</svg>');
  return out.join('\n');
}
