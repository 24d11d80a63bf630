import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  betaQuantile,
  binomialCdf,
  bootstrapMedianCi,
  clopperPearson,
  createRandom,
  medianCiRanks,
  modifiedZOutliers,
  rateBound,
  regularizedIncompleteBeta,
  signFlipTest,
  spearman,
  summarize,
} from '../../../reports/analysis/statistics.js';

const close = (actual: number | null | undefined, expected: number, tol = 1e-9, what = ''): void => {
  assert.ok(actual !== null && actual !== undefined && Math.abs(actual - expected) <= tol, `${what} expected ${expected}, got ${actual}`);
};

// Published values used below: the binomial tails of the distribution-free median interval as
// tabulated in W. J. Conover, Practical Nonparametric Statistics, 3rd ed. (Wiley 1999), Table A3
// (n = 10: P(Y <= 1) = 0.0107, P(Y <= 2) = 0.0547; n = 20: P(Y <= 5) = 0.0207, P(Y <= 6) = 0.0577,
// with Y ~ Bin(n, 1/2)); R's binom.test for Clopper-Pearson; NIST StRD univariate data sets
// NumAcc1 and NumAcc3 (certified mean and standard deviation); and the exact bootstrap
// distribution of the sample median (Maritz & Jarrett, JASA 73 (1978) 194-196; Efron, The
// Jackknife, the Bootstrap and Other Resampling Plans, SIAM 1982).

test('median CI ranks for n = 10 are the 2nd and 9th order statistics (coverage 1 - 22/1024)', () => {
  // P(Bin(10, 1/2) <= 1) = 11/1024 <= 0.025 < P(<= 2) = 56/1024 (Conover Table A3: 0.0107, 0.0547).
  close(binomialCdf(1, 10, 0.5), 0.0107, 5e-5, 'Table A3 n=10 y=1');
  close(binomialCdf(2, 10, 0.5), 0.0547, 5e-5, 'Table A3 n=10 y=2');
  const r = medianCiRanks(10)!;
  assert.equal([r.lower, r.upper], [2, 9]);
  close(r.coverage, 1 - 22 / 1024, 1e-12, 'coverage');
});

test('median CI ranks for n = 20 are the 6th and 15th (coverage 1 - 2 * 21700/2^20)', () => {
  // P(Bin(20, 1/2) <= 5) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20 = 21700 / 1048576 (Table A3: 0.0207, then 0.0577).
  close(binomialCdf(5, 20, 0.5), 0.0207, 5e-5, 'Table A3 n=20 y=5');
  close(binomialCdf(6, 20, 0.5), 0.0577, 5e-5, 'Table A3 n=20 y=6');
  const r = medianCiRanks(20)!;
  assert.equal([r.lower, r.upper], [6, 15]);
  close(r.coverage, 1 - (2 * 21700) / 1048576, 1e-12, 'coverage');
});

test('no distribution-free 95% median CI below n = 6; n = 6 uses min and max', () => {
  assert.is(medianCiRanks(5), null);
  const r = medianCiRanks(6)!;
  assert.equal([r.lower, r.upper], [1, 6]);
  close(r.coverage, 1 - 2 / 64, 1e-12);
});

test('summarize reads the CI from the ranked sample and reports p95 only from n = 20', () => {
  const ten = summarize([10, 1, 9, 2, 8, 3, 7, 4, 6, 5]);
  assert.is(ten.median, 5.5);
  assert.equal([ten.medianCi!.lower, ten.medianCi!.upper], [2, 9]);
  assert.is(ten.p95, null);
  const twenty = summarize(Array.from({ length: 20 }, (_, i) => 20 - i));
  assert.equal([twenty.medianCi!.lower, twenty.medianCi!.upper], [6, 15]);
  // simple-statistics quantileSorted interpolates linearly (R type 7): 19 + 0.05 * (20 - 19).
  close(twenty.p95, 19.05, 1e-9, 'p95');
  assert.is(twenty.min, 1);
  assert.is(twenty.max, 20);
  close(twenty.iqr, 9.5, 1e-9, 'iqr');
  // sd of 1..20 = sqrt(35), mean 10.5.
  close(twenty.cv, Math.sqrt(35) / 10.5, 1e-12, 'cv');
  assert.is(summarize([]).median, null);
});

test('zero events in N trials: upper bound 1 - 0.05^(1/N), equal to the Clopper-Pearson bound', () => {
  close(rateBound(0, 30).upper95, 0.09503385285530408, 1e-12, 'N=30');
  // The "rule of 59": 59 clean trials put the 95% bound under 5%.
  assert.ok(rateBound(0, 59).upper95! < 0.05);
  assert.ok(rateBound(0, 58).upper95! > 0.05);
  for (const n of [1, 3, 10, 100]) {
    close(rateBound(0, n).upper95, 1 - Math.pow(0.05, 1 / n), 1e-12, `closed form n=${n}`);
    close(clopperPearson(0, n).upper, 1 - Math.pow(0.05, 1 / n), 1e-9, `beta quantile n=${n}`);
  }
  assert.is(rateBound(0, 10).method, 'zero-events');
  assert.is(rateBound(0, 0).upper95, null);
});

test('Clopper-Pearson matches known exact intervals (R binom.test)', () => {
  // binom.test(1, 10)$conf.int = 0.002528579 0.445016117 (two-sided 95% = one-sided 97.5%).
  const a = clopperPearson(1, 10, 0.975);
  close(a.lower, 0.002528579, 1e-8, 'lower 1/10');
  close(a.upper, 0.445016117, 1e-8, 'upper 1/10');
  // binom.test(5, 10)$conf.int = 0.1870860 0.8129140.
  const b = clopperPearson(5, 10, 0.975);
  close(b.lower, 0.187086, 1e-6, 'lower 5/10');
  close(b.upper, 0.812914, 1e-6, 'upper 5/10');
  // One-sided 95% upper bound for 1 in 10: the p where P(X <= 1) = 0.05.
  const c = clopperPearson(1, 10, 0.95);
  close(binomialCdf(1, 10, c.upper), 0.05, 1e-9, 'defining identity');
  close(c.upper, 0.3941633, 1e-6, 'one-sided upper 1/10');
  assert.is(clopperPearson(10, 10).upper, 1);
  const r = rateBound(3, 20);
  assert.is(r.method, 'clopper-pearson');
  close(binomialCdf(3, 20, r.upper95!), 0.05, 1e-9, 'upper 3/20');
  close(1 - binomialCdf(2, 20, r.lower95!), 0.05, 1e-9, 'lower 3/20');
});

test('regularized incomplete beta against closed forms and the binomial tail', () => {
  close(regularizedIncompleteBeta(0.5, 3, 3), 0.5, 1e-12, 'symmetry');
  close(regularizedIncompleteBeta(0.2, 1, 4), 1 - 0.8 ** 4, 1e-12, 'I_x(1,b)');
  close(regularizedIncompleteBeta(0.7, 3, 1), 0.7 ** 3, 1e-12, 'I_x(a,1)');
  // I_p(k, n-k+1) = P(Bin(n, p) >= k): I_0.3(2, 5) = 1 - 0.7^6 - 6 * 0.3 * 0.7^5.
  close(regularizedIncompleteBeta(0.3, 2, 5), 1 - 0.7 ** 6 - 6 * 0.3 * 0.7 ** 5, 1e-12, 'binomial tail');
  for (const [p, a, b] of [
    [0.9, 2, 30],
    [0.05, 12, 3],
    [0.5, 0.5, 0.5],
  ] as const) {
    close(regularizedIncompleteBeta(betaQuantile(p, a, b), a, b), p, 1e-9, `quantile inverts (${p}, ${a}, ${b})`);
  }
  assert.throws(() => regularizedIncompleteBeta(0.5, 0, 1));
});

test('the seeded random source is reproducible', () => {
  const a = createRandom(7);
  const b = createRandom(7);
  const xs = Array.from({ length: 5 }, () => a());
  assert.equal(
    xs,
    Array.from({ length: 5 }, () => b()),
  );
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.not.equal(xs, Array.from({ length: 5 }, createRandom(8)));
});

test('NIST StRD NumAcc1 and NumAcc3: certified mean and standard deviation; the median of their published data', () => {
  // NumAcc1: 10000001, 10000003, 10000002; certified mean 10000002, sd 1 (exact).
  const one = summarize([10000001, 10000003, 10000002]);
  assert.is(one.median, 10000002);
  close(one.mean, 10000002, 0, 'NumAcc1 mean');
  close(one.cv! * one.mean!, 1, 1e-9, 'NumAcc1 sd');
  // NumAcc3: 1000000.2, then 500 pairs of 1000000.1 and 1000000.3; certified mean 1000000.2, sd 0.1 (exact).
  const three = [1000000.2, ...Array.from({ length: 500 }, () => [1000000.1, 1000000.3]).flat()];
  const s3 = summarize(three);
  assert.is(s3.n, 1001);
  close(s3.mean, 1000000.2, 1e-8, 'NumAcc3 mean');
  close(s3.cv! * s3.mean!, 0.1, 1e-7, 'NumAcc3 sd (about 9 significant digits survive the cancellation)');
  assert.is(s3.median, 1000000.2);
});

/** P(bootstrap median <= x(k)) for n distinct values, n odd: P(Bin(n, k/n) >= (n+1)/2) (Maritz & Jarrett 1978). */
function exactBootstrapMedianCdf(n: number, k: number): number {
  return 1 - binomialCdf((n - 1) / 2, n, k / n);
}

test('bootstrap interval of the median matches its exact distribution (percentile 2.5% and 97.5%)', () => {
  // The percentile interval's ends are the order statistics where the exact bootstrap CDF first
  // reaches 0.025 and 0.975. For n = 7 that is x(2) and x(6) (CDF 0.0102, 0.1083 / 0.8917, 0.9898),
  // for n = 11 x(3) and x(9) (0.0072, 0.0512 / 0.9488, 0.9928): each margin is 7+ Monte Carlo
  // standard deviations at 4000 resamples, so every seed must give exactly these.
  for (const [n, lo, hi] of [
    [7, 2, 6],
    [11, 3, 9],
  ] as const) {
    close(exactBootstrapMedianCdf(n, lo - 1), n === 7 ? 0.0102 : 0.0072, 5e-5, `cdf below x(${lo})`);
    assert.ok(
      exactBootstrapMedianCdf(n, lo) >= 0.025 && exactBootstrapMedianCdf(n, hi - 1) < 0.975 && exactBootstrapMedianCdf(n, hi) >= 0.975,
    );
    const xs = Array.from({ length: n }, (_, i) => 10 + i * i); // distinct, unevenly spaced, x(k) = 10 + (k-1)^2
    const shuffled = [...xs].reverse();
    for (const seed of [1, 42, 20260101]) {
      const ci = bootstrapMedianCi(shuffled, seed)!;
      assert.equal([ci.lower, ci.upper], [xs[lo - 1], xs[hi - 1]], `n=${n} seed ${seed}`);
      assert.equal(bootstrapMedianCi(shuffled, seed), ci, 'reproducible from its seed');
    }
  }
  assert.is(bootstrapMedianCi([0.5], 1), null);
});

test('sign-flip permutation p is exact for few blocks and never 0', () => {
  const logs = [0.9, 0.8, 1.1, 0.7, 1.2].map(Math.log);
  const exact = signFlipTest([2, 3, 4, 5, 6].map(Math.log), 1)!;
  // Every log ratio positive: only the identity and the all-flipped vector are as extreme.
  assert.is(exact.method, 'exact');
  close(exact.p, 2 / 32, 1e-15, 'exact p');
  assert.ok(signFlipTest(logs, 1)!.p > 0.05, 'mixed signs are not significant');
  const mc = signFlipTest(
    Array.from({ length: 24 }, () => Math.log(0.5)),
    1,
  )!;
  assert.is(mc.method, 'monte-carlo');
  assert.ok(mc.p > 0 && mc.p <= 3 / 10000, `Monte Carlo p ${mc.p}`);
  close(mc.minAttainableP, 1 / 10000, 1e-15);
  assert.is(signFlipTest([0, 0, 0], 1)!.p, 1);
  assert.is(signFlipTest([], 1), null);
});

test('modified z-score flags the one far value and keeps it in the data', () => {
  const values = [10, 10, 11, 10, 12, 11, 10, 50];
  const out = modifiedZOutliers(values);
  assert.equal(
    out.map((o) => o.index),
    [7],
  );
  assert.ok(out[0]!.score > 3.5);
  assert.is(values.length, 8);
  assert.equal(modifiedZOutliers([5, 5, 5, 5]), []);
});

test('Spearman rank correlation of a monotone series is 1, of a reversed one -1', () => {
  close(spearman([1, 2, 3, 4, 5], [10, 20, 25, 100, 1000]), 1, 1e-12);
  close(spearman([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]), -1, 1e-12);
  assert.is(spearman([1, 2, 3], [4, 4, 4]), null);
});

test.run();
