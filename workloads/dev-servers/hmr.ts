// The HMR half: both servers answer, both HMR channels are open, then A edits, then B edits. Each
// channel must report its own session's edit and stay quiet for the other's. Vite's channel is its
// HMR WebSocket (`vite-hmr` at /); Next.js 16 dev (Turbopack) has a WebSocket at /_next/hmr that
// sends "serverComponentChanges" and "built" about 70 ms after an edit of a page's module, without
// naming the module, so B's own edit is also confirmed over HTTP: the page serves B's text.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PdbError } from '../../model/errors.js';
import { connectHmr, httpGet, type HmrSocket } from '../tools/vite-hmr.js';
import { DEV_SERVER_EDITS, editedBytes } from './edits.js';
import { serverPort, type DevServer } from './servers.js';

/** What each channel saw; the checks judge it (see hmrFindings). */
export interface HmrObservation {
  /** Vite (A): the modules each update named (a full reload is recorded as "full-reload:<what triggered it>"). */
  aAfterOwnEdit: string[];
  aAfterPeerEdit: string[];
  /** Next.js (B): the change messages ("built", "serverComponentChanges", ...) by type. */
  bAfterPeerEdit: string[];
  bAfterOwnEdit: string[];
  /** Did B's page serve B's edit, and A's modules A's edit (and not B's)? */
  bPageServesOwnEdit: boolean;
  aServesOwnEditOnly: boolean;
  milestones: Record<string, number>;
}

const NEXT_CHANGES = new Set([
  'building',
  'built',
  'sync',
  'serverComponentChanges',
  'serverOnlyChanges',
  'reloadPage',
  'turbopack-message',
  'addedPage',
  'removedPage',
]);

function viteChanges(msgs: any[]): string[] {
  return msgs.flatMap((m) =>
    m?.type === 'update'
      ? ((m.updates ?? []) as Array<{ path?: string; acceptedPath?: string }>).map((u) => String(u.acceptedPath ?? u.path))
      : m?.type === 'full-reload'
        ? [
            `full-reload:${String(m.triggeredBy ?? m.path ?? '*')
              .split('/')
              .slice(-3)
              .join('/')}`,
          ]
        : [],
  );
}

const nextChanges = (msgs: any[]) => msgs.filter((m) => NEXT_CHANGES.has(m?.type)).map((m) => String(m.type));

/** Messages after the first `from` of a socket. */
const since = (ws: HmrSocket, from: number) => ws.messages().slice(from);

/** Request what a browser would, so both servers know the modules their pages import (edits to unloaded modules are silent). */
async function loadPages(vite: DevServer, next: DevServer, left: () => number): Promise<void> {
  for (const path of ['/', '/src/vite/main.ts', DEV_SERVER_EDITS.a.module, DEV_SERVER_EDITS.b.module]) {
    const r = await httpGet(serverPort(vite), path, left());
    if (r.status !== 200) throw new PdbError('E_STEP_FAILED', `vite in ${vite.session.name} answered GET ${path} with HTTP ${r.status}`);
  }
  const page = await httpGet(serverPort(next), '/', left());
  if (page.status !== 200) throw new PdbError('E_STEP_FAILED', `next dev in ${next.session.name} answered GET / with HTTP ${page.status}`);
}

/** Poll B's page (Next compiles on request) until it serves B's edit or the time is up. */
async function pageServes(next: DevServer, text: string, left: () => number): Promise<boolean> {
  for (;;) {
    const r = await httpGet(serverPort(next), '/', left()).catch(() => null);
    if (r?.status === 200 && r.body.includes(text)) return true;
    if (left() <= 250) return false;
    await sleep(250);
  }
}

/** Edit A, then B, watching both HMR channels; each waits `quietMs` for the other's edit to (wrongly) show. */
export async function observeHmr(vite: DevServer, next: DevServer, quietMs: number, left: () => number): Promise<HmrObservation> {
  await loadPages(vite, next, left);
  const wsA = await connectHmr(serverPort(vite), 'vite-hmr', left());
  let wsB: HmrSocket | null = null;
  try {
    wsB = await connectHmr(serverPort(next), null, left(), '/_next/hmr');
    await wsA.waitFor((m) => m?.type === 'connected', left(), 'Vite HMR connected message');
    await wsB.waitFor((m) => m?.type === 'sync' || m?.type === 'turbopack-connected', left(), 'Next.js HMR sync message');
    await sleep(quietMs); // let start-up messages settle before the marks
    const a0 = wsA.messages().length;
    const b0 = wsB.messages().length;
    const t1 = performance.now();
    writeFileSync(join(vite.session.root, DEV_SERVER_EDITS.a.path), editedBytes('a'));
    await wsA.waitFor((m) => wsA.messages().indexOf(m) >= a0 && viteChanges([m]).length > 0, left(), 'Vite HMR update after the edit in A');
    const aUpdateMs = performance.now() - t1;
    await sleep(quietMs);
    const aAfterOwnEdit = viteChanges(since(wsA, a0));
    const bAfterPeerEdit = nextChanges(since(wsB, b0));

    const a1 = wsA.messages().length;
    const b1 = wsB.messages().length;
    const t2 = performance.now();
    writeFileSync(join(next.session.root, DEV_SERVER_EDITS.b.path), editedBytes('b'));
    await wsB.waitFor(
      (m) => wsB!.messages().indexOf(m) >= b1 && nextChanges([m]).length > 0,
      left(),
      'Next.js HMR message after the edit in B',
    );
    const bBuiltMs = performance.now() - t2;
    const bPageServesOwnEdit = await pageServes(next, DEV_SERVER_EDITS.b.text, left);
    await sleep(quietMs);
    const aMessage = await httpGet(serverPort(vite), DEV_SERVER_EDITS.a.module, left());
    const aGreeting = await httpGet(serverPort(vite), DEV_SERVER_EDITS.b.module, left());
    return {
      aAfterOwnEdit,
      aAfterPeerEdit: viteChanges(since(wsA, a1)),
      bAfterPeerEdit,
      bAfterOwnEdit: nextChanges(since(wsB, b1)),
      bPageServesOwnEdit,
      aServesOwnEditOnly: aMessage.body.includes(DEV_SERVER_EDITS.a.text) && !aGreeting.body.includes(DEV_SERVER_EDITS.b.text),
      milestones: { viteHmrUpdateMs: Math.round(aUpdateMs), nextHmrBuiltMs: Math.round(bBuiltMs) },
    };
  } finally {
    wsA.close();
    wsB?.close();
  }
}

/** The problems in what the channels saw: each must report its own edit, and only that. */
export function hmrFindings(o: HmrObservation): string[] {
  const problems: string[] = [];
  if (!o.aAfterOwnEdit.includes(DEV_SERVER_EDITS.a.module))
    problems.push(`A's Vite update did not name ${DEV_SERVER_EDITS.a.module} (got ${o.aAfterOwnEdit.join(', ') || 'nothing'})`);
  const foreignA = o.aAfterOwnEdit.filter((m) => m !== DEV_SERVER_EDITS.a.module);
  if (foreignA.length) problems.push(`A's Vite reported other changes after A's edit: ${foreignA.join(', ')}`);
  // A late repeat of A's own update (a second watcher event for one write) is not B's edit.
  const leakedB = o.aAfterPeerEdit.filter((m) => m !== DEV_SERVER_EDITS.a.module);
  if (leakedB.length) problems.push(`A's Vite reported B's edit: ${leakedB.join(', ')}`);
  if (o.bAfterPeerEdit.length) problems.push(`B's Next.js reported A's edit: ${o.bAfterPeerEdit.join(', ')}`);
  if (o.bAfterOwnEdit.length === 0) problems.push("B's Next.js sent nothing after B's edit");
  if (!o.bPageServesOwnEdit) problems.push("B's page never served B's edit");
  if (!o.aServesOwnEditOnly) problems.push("A's Vite did not serve A's edit alone (B's edit or the base showed)");
  return problems;
}
