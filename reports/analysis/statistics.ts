// Statistics for decision reports. simple-statistics supplies the summaries (median, quantiles,
// IQR, MAD, standard deviation, rank correlation, resampling with an injected random source);
// it has no binomial quantile, no regularized incomplete beta and no paired sign-flip test, so
// those are written here (order-statistic ranks, Clopper-Pearson bounds, the permutation p-value).
import * as ss from 'simple-statistics';

/** A seeded random source in [0, 1): mulberry32, so a report's resampling is reproducible. */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Binomial and beta functions

/** log of n choose k. */
function logChoose(n: number, k: number): number {
  return ss.gammaln(n + 1) - ss.gammaln(k + 1) - ss.gammaln(n - k + 1);
}

/** P(X <= k) for X ~ Binomial(n, p), summed exactly (n is a sample size here, never huge). */
export function binomialCdf(k: number, n: number, p: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    if (p === 0) sum += i === 0 ? 1 : 0;
    else if (p === 1) sum += i === n ? 1 : 0;
    else sum += Math.exp(logChoose(n, i) + i * Math.log(p) + (n - i) * Math.log1p(-p));
  }
  return Math.min(1, sum);
}

/** Continued fraction for the incomplete beta (modified Lentz), as in Numerical Recipes' betacf. */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-15) break;
  }
  return h;
}

/** Regularized incomplete beta I_x(a, b) for a, b > 0. */
export function regularizedIncompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0)) throw new RangeError(`incomplete beta needs a, b > 0 (got ${a}, ${b})`);
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const lnFront = ss.gammaln(a + b) - ss.gammaln(a) - ss.gammaln(b) + a * Math.log(x) + b * Math.log1p(-x);
  const front = Math.exp(lnFront);
  // The continued fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
  if (x < (a + 1) / (a + b + 2)) return (front * betaContinuedFraction(x, a, b)) / a;
  return 1 - (front * betaContinuedFraction(1 - x, b, a)) / b;
}

/** The p-quantile of Beta(a, b): bisection on the monotone I_x(a, b), to 1e-12. */
export function betaQuantile(p: number, a: number, b: number): number {
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 200 && hi - lo > 1e-12; i++) {
    const mid = (lo + hi) / 2;
    if (regularizedIncompleteBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

export interface RateBound {
  events: number;
  trials: number;
  /** events / trials, null with no trials. */
  rate: number | null;
  /** One-sided 95% lower bound (Clopper-Pearson); 0 when there are no events. */
  lower95: number | null;
  /** One-sided 95% upper bound: 1 - 0.05^(1/N) with 0 events, Clopper-Pearson otherwise. */
  upper95: number | null;
  method: 'zero-events' | 'clopper-pearson' | 'none';
}

/** Exact binomial bounds (one-sided, at `confidence`) for `events` in `trials`. */
export function clopperPearson(events: number, trials: number, confidence = 0.95): { lower: number; upper: number } {
  if (!Number.isInteger(events) || !Number.isInteger(trials) || events < 0 || trials < 1 || events > trials) {
    throw new RangeError(`clopperPearson needs 0 <= events <= trials, trials >= 1 (got ${events}/${trials})`);
  }
  const lower = events === 0 ? 0 : betaQuantile(1 - confidence, events, trials - events + 1);
  const upper = events === trials ? 1 : betaQuantile(confidence, events + 1, trials - events);
  return { lower, upper };
}

/** A rate with its 95% one-sided bounds; the zero-event upper bound has the closed form 1 - 0.05^(1/N). */
export function rateBound(events: number, trials: number): RateBound {
  if (trials === 0) return { events, trials, rate: null, lower95: null, upper95: null, method: 'none' };
  if (events === 0) return { events, trials, rate: 0, lower95: 0, upper95: 1 - Math.pow(0.05, 1 / trials), method: 'zero-events' };
  const { lower, upper } = clopperPearson(events, trials, 0.95);
  return { events, trials, rate: events / trials, lower95: lower, upper95: upper, method: 'clopper-pearson' };
}

// ---------------------------------------------------------------------------------------------
// Order statistics

/**
 * 1-based ranks (l, u) of the order statistics that bound a distribution-free confidence interval
 * for the median: the largest l with P(Bin(n, 1/2) <= l - 1) <= (1 - confidence) / 2, u = n + 1 - l.
 * Coverage is 1 - 2 P(Bin(n, 1/2) <= l - 1) >= confidence. Null when n is too small (n < 6 at 95%).
 */
export function medianCiRanks(n: number, confidence = 0.95): { lower: number; upper: number; coverage: number } | null {
  const tail = (1 - confidence) / 2;
  let l = 0;
  while (l + 1 <= n && binomialCdf(l, n, 0.5) <= tail) l++;
  if (l < 1) return null;
  return { lower: l, upper: n + 1 - l, coverage: 1 - 2 * binomialCdf(l - 1, n, 0.5) };
}

export interface Summary {
  n: number;
  median: number | null;
  /** Distribution-free 95% CI of the median from order statistics; null when n < 6. */
  medianCi: { lower: number; upper: number; lowerRank: number; upperRank: number; coverage: number } | null;
  /** 95th percentile; null when n < 20. */
  p95: number | null;
  min: number | null;
  max: number | null;
  iqr: number | null;
  /** Sample standard deviation / mean; null when n < 2 or the mean is 0. */
  cv: number | null;
  mean: number | null;
}

export function summarize(values: number[]): Summary {
  const n = values.length;
  if (n === 0) return { n, median: null, medianCi: null, p95: null, min: null, max: null, iqr: null, cv: null, mean: null };
  const sorted = [...values].sort((a, b) => a - b);
  const ranks = medianCiRanks(n);
  const mean = ss.mean(sorted);
  return {
    n,
    median: ss.medianSorted(sorted),
    medianCi: ranks
      ? {
          lower: sorted[ranks.lower - 1]!,
          upper: sorted[ranks.upper - 1]!,
          lowerRank: ranks.lower,
          upperRank: ranks.upper,
          coverage: ranks.coverage,
        }
      : null,
    p95: n >= 20 ? ss.quantileSorted(sorted, 0.95) : null,
    min: sorted[0]!,
    max: sorted[n - 1]!,
    iqr: n >= 2 ? ss.quantileSorted(sorted, 0.75) - ss.quantileSorted(sorted, 0.25) : null,
    cv: n >= 2 && mean !== 0 ? ss.sampleStandardDeviation(sorted) / mean : null,
    mean,
  };
}

// ---------------------------------------------------------------------------------------------
// Paired comparisons (candidate / full-copy, one ratio per block)

export interface BootstrapCi {
  lower: number;
  upper: number;
  resamples: number;
  seed: number;
}

/**
 * Percentile bootstrap CI of the median ratio. Each resample draws whole blocks with replacement
 * (a block's ratio already pairs the candidate with full-copy from the same block), so the
 * block-to-block variation, not the case-to-case one, drives the interval.
 */
export function bootstrapMedianCi(ratios: number[], seed: number, resamples = 4000, confidence = 0.95): BootstrapCi | null {
  if (ratios.length < 2) return null;
  const random = createRandom(seed);
  const medians = new Array<number>(resamples);
  for (let i = 0; i < resamples; i++) medians[i] = ss.median(ss.sampleWithReplacement(ratios, ratios.length, random));
  medians.sort((a, b) => a - b);
  const alpha = (1 - confidence) / 2;
  return { lower: ss.quantileSorted(medians, alpha), upper: ss.quantileSorted(medians, 1 - alpha), resamples, seed };
}

export interface PermutationResult {
  /** Two-sided p-value of the mean log ratio; never 0. */
  p: number;
  method: 'exact' | 'monte-carlo';
  /** Sign assignments evaluated (2^n when exact). */
  permutations: number;
  /** Smallest p this test could report with these blocks. */
  minAttainableP: number;
}

/**
 * Paired sign-flip permutation test on log ratios: under "no difference" each block's log ratio
 * is as likely negative as positive. Exact over all 2^n sign vectors up to `exactMaxBlocks`; Monte
 * Carlo with m draws otherwise, reported as (k + 1) / (m + 1) so it is never 0.
 */
export function signFlipTest(logRatios: number[], seed: number, draws = 9999, exactMaxBlocks = 16): PermutationResult | null {
  const n = logRatios.length;
  if (n === 0) return null;
  const observed = Math.abs(logRatios.reduce((s, x) => s + x, 0));
  const eps = 1e-12 * Math.max(1, observed);
  if (n <= exactMaxBlocks) {
    const total = 2 ** n;
    let extreme = 0;
    for (let mask = 0; mask < total; mask++) {
      let s = 0;
      for (let i = 0; i < n; i++) s += mask & (1 << i) ? -logRatios[i]! : logRatios[i]!;
      if (Math.abs(s) >= observed - eps) extreme++;
    }
    // The identity and its mirror are always at least as extreme, so p >= 2 / 2^n > 0.
    return { p: extreme / total, method: 'exact', permutations: total, minAttainableP: Math.min(1, 2 / total) };
  }
  const random = createRandom(seed);
  let k = 0;
  for (let j = 0; j < draws; j++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += random() < 0.5 ? -logRatios[i]! : logRatios[i]!;
    if (Math.abs(s) >= observed - eps) k++;
  }
  return { p: (k + 1) / (draws + 1), method: 'monte-carlo', permutations: draws, minAttainableP: 1 / (draws + 1) };
}

// ---------------------------------------------------------------------------------------------
// Diagnostics (shown, never used to drop data)

/** Indexes whose modified z-score 0.6745 (x - median) / MAD exceeds `threshold` (Iglewicz-Hoaglin). */
export function modifiedZOutliers(values: number[], threshold = 3.5): { index: number; value: number; score: number }[] {
  if (values.length < 3) return [];
  const med = ss.median(values);
  const mad = ss.medianAbsoluteDeviation(values);
  if (mad === 0) return [];
  const out: { index: number; value: number; score: number }[] = [];
  values.forEach((value, index) => {
    const score = (0.6745 * (value - med)) / mad;
    if (Math.abs(score) > threshold) out.push({ index, value, score });
  });
  return out;
}

/** Spearman rank correlation (simple-statistics uses midranks for ties); null when n < 3 or a series is constant. */
export function spearman(x: number[], y: number[]): number | null {
  if (x.length !== y.length || x.length < 3) return null;
  if (ss.variance(x) === 0 || ss.variance(y) === 0) return null;
  return ss.sampleRankCorrelation(x, y);
}
