// "Did you mean": near misses of a backend or command name are suggested, far ones are not.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { didYouMean, didYouMeanText, editDistance } from '../../model/did-you-mean.js';
import { assertBackendName } from '../../backends/registry.js';
import { BACKEND_NAMES } from '../../backends/table.js';

test('editDistance counts a swap of neighbours as one edit', () => {
  assert.is(editDistance('overlya', 'overlay'), 1);
  assert.is(editDistance('', 'abc'), 3);
  assert.is(editDistance('reflink', 'reflink'), 0);
  assert.is(editDistance('kitten', 'sitting'), 3);
});

test('didYouMean: the nearest known names within a third of the length, or none', () => {
  assert.equal(didYouMean('overlya', BACKEND_NAMES), ['overlay']);
  assert.equal(didYouMean('full_copy', BACKEND_NAMES), ['full-copy']);
  assert.equal(didYouMean('Reflink', BACKEND_NAMES), ['reflink']);
  assert.equal(didYouMean('zfs', BACKEND_NAMES), []);
  assert.is(didYouMeanText('creat', ['create', 'checkpoint']), 'Did you mean create? ');
  assert.is(didYouMeanText('zzz', ['create']), '');
});

test('--backend overlya: E_BACKEND_UNKNOWN whose hint says "Did you mean overlay?"', () => {
  try {
    assertBackendName('overlya');
    assert.unreachable('unknown');
  } catch (err) {
    const e = err as { code: string; hint?: string };
    assert.is(e.code, 'E_BACKEND_UNKNOWN');
    assert.match(e.hint ?? '', /^Did you mean overlay\? Choose one of: full-copy/);
  }
});

test.run();
