// The changes between two Snapshots read from their canonical bytes, entry by entry: both
// documents list their entries sorted by path, so one merge over the two finds every change. An
// entry is parsed only where the two differ; equal canonical bytes are equal entries (the bytes
// are the identity). Parsing both 250,000-entry documents into objects and two Maps took 416 MB
// RSS for a diff of ten changed files.
import { changeOf, comparePaths, type Change, type Entry } from './snapshot.js';

const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const END = 0x5d; // ]

/** Where the entries of a canonical Snapshot document start (its first '{' or the closing ']'), or -1 when it is not laid out so. */
function entriesStart(doc: Buffer): number {
  const nullHead = '{"base":null,"entries":[';
  if (doc.toString('latin1', 0, nullHead.length) === nullHead) return nullHead.length;
  const m = /^\{"base":"sha256:[0-9a-f]{64}","entries":\[/.exec(doc.toString('latin1', 0, 100));
  return m ? m[0].length : -1;
}

/** The end (exclusive) of the entry object starting at `at` (a '{'), or -1. Entries hold no nested object. */
function entryEnd(doc: Buffer, at: number): number {
  if (doc[at] !== OPEN) return -1;
  let inString = false;
  for (let i = at + 1; i < doc.length; i++) {
    const b = doc[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === CLOSE) return i + 1;
  }
  return -1;
}

/** A cursor over a document's entries: [start, end) of the current one, end = -1 past the last. */
class Cursor {
  start: number;
  end: number;
  constructor(
    readonly doc: Buffer,
    start: number,
  ) {
    this.start = start;
    this.end = doc[start] === END ? -1 : entryEnd(doc, start);
    if (this.end < 0 && doc[start] !== END) throw new SyntaxError('not a canonical Snapshot');
  }
  get done(): boolean {
    return this.end < 0;
  }
  entry(): Entry {
    return JSON.parse(this.doc.toString('utf8', this.start, this.end)) as Entry;
  }
  next(): void {
    const sep = this.doc[this.end];
    if (sep === COMMA) {
      this.start = this.end + 1;
      this.end = entryEnd(this.doc, this.start);
      if (this.end < 0) throw new SyntaxError('not a canonical Snapshot');
    } else if (sep === END) this.end = -1;
    else throw new SyntaxError('not a canonical Snapshot');
  }
}

/**
 * The exact sorted path changes from the Snapshot whose canonical bytes are `before` to that of
 * `after`: what diffEntries gives for their entries. For a document not laid out as the canonical
 * writer lays it out, `fallback` answers (the caller parses it whole, with its own errors).
 */
export function diffSnapshotBytes(before: Buffer, after: Buffer, fallback: () => Change[]): Change[] {
  const [sa, sb] = [entriesStart(before), entriesStart(after)];
  if (sa >= 0 && sb >= 0) {
    try {
      return mergeDiff(new Cursor(before, sa), new Cursor(after, sb));
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
    }
  }
  return fallback();
}

function mergeDiff(a: Cursor, b: Cursor): Change[] {
  const changes: Change[] = [];
  const push = (c: Change | null) => c && changes.push(c);
  while (!a.done && !b.done) {
    if (a.end - a.start === b.end - b.start && a.doc.compare(b.doc, b.start, b.end, a.start, a.end) === 0) {
      a.next();
      b.next();
      continue;
    }
    const [x, y] = [a.entry(), b.entry()];
    const order = comparePaths(x.path, y.path);
    if (order === 0) {
      push(changeOf(x.path, x, y));
      a.next();
      b.next();
    } else if (order < 0) {
      push(changeOf(x.path, x, null));
      a.next();
    } else {
      push(changeOf(y.path, null, y));
      b.next();
    }
  }
  for (let e: Entry; !a.done; a.next()) push(changeOf((e = a.entry()).path, e, null));
  for (let e: Entry; !b.done; b.next()) push(changeOf((e = b.entry()).path, null, e));
  return changes;
}
