import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nameMatcher, scrubText } from '../../model/scrub.js';

const NAMES = { userNames: ['alice'], hostNames: ['build-box-17'] };

test('tool output is scrubbed of absolute paths before it can reach a receipt', () => {
  const s = scrubText('error in /srv/x/session/root/src/a.ts: see "/opt/y" and file:///tmp/z', { roots: ['/srv/x/session/root'] });
  assert.not.match(s, /\/srv|\/opt|\/tmp|file:/);
  assert.match(s, /<dir>\/src\/a\.ts/);
});

test('the longest root wins, so a nested root keeps its own tail', () => {
  const s = scrubText('/w/run/shared/pnpm-store and /w/run/scratch', { ...NAMES, roots: ['/w/run', '/w/run/shared'] });
  assert.is(s, '<dir>/pnpm-store and <dir>/scratch');
});

test('paths, user and host names become placeholders; a lone "/" and ordinary words stay', () => {
  const s = scrubText('alice@build-box-17 wrote C:\\Users\\alice\\x to / (not /) in "/home/alice/p", needs root', NAMES);
  assert.is(s, '<user>@<host> wrote <path> to / (not /) in "<path>", needs root');
});

test('names match whole tokens only, and generic account names never match', () => {
  assert.is(scrubText('vmlinuz on vm', { userNames: [], hostNames: ['vm'] }), 'vmlinuz on <host>');
  assert.is(nameMatcher(['root', 'runner', 'x']), null);
  assert.ok(nameMatcher(['alice'])?.test('by alice.'));
});

test.run();
