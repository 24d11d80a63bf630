// The neutral document the report is built as: headings, paragraphs, tables and charts, printed
// by the Markdown and HTML renderers alike.
import type { Verdict } from '../gate/gate-policy.js';

export type Block =
  | { kind: 'heading'; level: 1 | 2 | 3; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'verdict'; verdict: Verdict; text: string }
  | { kind: 'list'; items: string[] }
  | { kind: 'table'; header: string[]; rows: string[][]; align?: ('l' | 'r')[] }
  | { kind: 'chart'; name: string; title: string; svg: string };
