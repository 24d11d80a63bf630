// Renderers: the neutral document as Markdown (charts inline or as sibling .svg files), as one
// self-contained HTML page (inline CSS and SVG, no script, no network), and the numbers as JSON.
import type { ReportData } from '../analysis/report-data.js';
import { buildDocument, type Block, type ReportInput } from '../document/document.js';
import type { GateResult } from '../gate/gate-policy.js';
import { escapeXml } from '../document/svg.js';

export interface RenderedMarkdown {
  markdown: string;
  /** Chart files relative to the Markdown file (empty when charts are inline). */
  files: Record<string, string>;
}

function mdCell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/**
 * Markdown for design records. `charts: 'files'` links charts/<name>.svg (GitHub strips inline
 * <svg> from Markdown); `charts: 'inline'` embeds the SVG markup for viewers that render it.
 */
export function renderMarkdown(input: ReportInput, options: { charts?: 'files' | 'inline' } = {}): RenderedMarkdown {
  const mode = options.charts ?? 'files';
  const files: Record<string, string> = {};
  const out: string[] = [];
  for (const b of buildDocument(input)) {
    switch (b.kind) {
      case 'heading':
        out.push(`${'#'.repeat(b.level)} ${b.text}`, '');
        break;
      case 'paragraph':
        out.push(b.text, '');
        break;
      case 'verdict':
        out.push(`> **${b.verdict}** ${b.text.slice(b.verdict.length + 1).trim()}`, '');
        break;
      case 'list':
        out.push(...b.items.map((i) => `- ${i}`), '');
        break;
      case 'table': {
        const align = b.header.map((_, i) => (b.align?.[i] === 'r' ? '---:' : '---'));
        out.push(`| ${b.header.map(mdCell).join(' | ')} |`, `| ${align.join(' | ')} |`);
        for (const r of b.rows) out.push(`| ${r.map(mdCell).join(' | ')} |`);
        out.push('');
        break;
      }
      case 'chart':
        if (mode === 'inline') out.push(b.svg, '');
        else {
          files[`charts/${b.name}.svg`] = `${b.svg}\n`;
          out.push(`![${b.title}](charts/${b.name}.svg)`, '');
        }
        break;
      default: {
        const never: never = b;
        throw new Error(`unknown block ${JSON.stringify(never)}`);
      }
    }
  }
  return { markdown: `${out.join('\n').trimEnd()}\n`, files };
}

const CSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#111827;background:#f9fafb;margin:0;padding:24px 32px;line-height:1.45}
main{max-width:1140px;margin:0 auto}
h1{font-size:1.7em;margin:0 0 .4em}h2{margin-top:1.8em;border-bottom:1px solid #e5e7eb;padding-bottom:.2em}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:13px;background:#fff}
th,td{border:1px solid #e5e7eb;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f3f4f6}
td.r{text-align:right;font-variant-numeric:tabular-nums}
.chart{background:#fff;border:1px solid #e5e7eb;display:inline-block;margin:.4em 0}
.verdict{font-size:1.15em;padding:10px 14px;border-radius:6px;margin:.6em 0;border:1px solid}
.PROMOTE{background:#ecfdf5;border-color:#059669}.HOLD{background:#fffbeb;border-color:#d97706}.REJECT{background:#fef2f2;border-color:#dc2626}
tr.reject td:first-child{color:#b91c1c;font-weight:600}tr.hold td:first-child{color:#b45309;font-weight:600}tr.met td:first-child{color:#047857}
`;

/** One self-contained page: inline CSS and SVG, no scripts, no external resources. */
export function renderHtml(input: ReportInput): string {
  const body: string[] = [];
  for (const b of buildDocument(input)) {
    switch (b.kind) {
      case 'heading':
        body.push(`<h${b.level}>${escapeXml(b.text)}</h${b.level}>`);
        break;
      case 'paragraph':
        body.push(`<p>${escapeXml(b.text)}</p>`);
        break;
      case 'verdict':
        body.push(
          `<div class="verdict ${b.verdict}"><strong>${b.verdict}</strong> ${escapeXml(b.text.slice(b.verdict.length + 1).trim())}</div>`,
        );
        break;
      case 'list':
        body.push(`<ul>${b.items.map((i) => `<li>${escapeXml(i)}</li>`).join('')}</ul>`);
        break;
      case 'table': {
        const statusCol = b.header[0] === 'status';
        body.push(
          `<table><thead><tr>${b.header.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr></thead><tbody>` +
            b.rows
              .map(
                (r) =>
                  `<tr${statusCol ? ` class="${escapeXml(r[0]!.toLowerCase())}"` : ''}>${r.map((c, i) => `<td${b.align?.[i] === 'r' ? ' class="r"' : ''}>${escapeXml(c)}</td>`).join('')}</tr>`,
              )
              .join('') +
            '</tbody></table>',
        );
        break;
      }
      case 'chart':
        body.push(`<figure class="chart" id="${escapeXml(b.name)}">${b.svg}</figure>`);
        break;
      default: {
        const never: never = b;
        throw new Error(`unknown block ${JSON.stringify(never)}`);
      }
    }
  }
  const title = input.gate ? `pdb-env report: ${input.gate.verdict} ${input.gate.candidate}` : 'pdb-env report';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>${escapeXml(title)}</title>
<style>${CSS}</style>
</head>
<body><main>
${body.join('\n')}
</main></body>
</html>
`;
}

export interface ReportJson extends ReportData {
  gate: GateResult | null;
  /** Who signed each receipt, by run id (keyids, or "unsigned"); absent when the reader did not say. */
  signers?: Record<string, string[] | 'unsigned'>;
  /** Whether a gate counts each receipt, by run id: its trusted signer's host, or the code and reason it is left out. */
  admission?: ReportInput['admission'];
  /** Receipts that repeat another's measurements (E_RECEIPT_DUPLICATE), left out before the analysis. */
  repeats?: ReportInput['repeats'];
}

/** The same numbers as the Markdown and HTML, as JSON. */
export function renderJson(input: ReportInput): string {
  const doc: ReportJson = {
    ...input.data,
    gate: input.gate,
    ...(input.signers ? { signers: input.signers } : {}),
    ...(input.admission ? { admission: input.admission } : {}),
    ...(input.repeats?.length ? { repeats: input.repeats } : {}),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export type { Block };
