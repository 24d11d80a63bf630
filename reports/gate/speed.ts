// The gate's speed criteria, fixture by fixture: a policy names the fixtures each rule judges. A
// sizeable fixture (fixtures.ratio) must show the speed-up as a ratio and no significant slowdown;
// a tiny one (fixtures.slack), where a ratio of milliseconds means nothing, may be at most
// slack.maxSlowerMs slower than the baseline. Blocks are counted per fixture, never pooled.
import type { GateContext } from './criteria.js';
import { matchesFixture } from './gate-policy.js';
import { fmtRatio } from '../analysis/format.js';
import type { Comparison, Testbed } from '../analysis/report-data.js';

export type SpeedRule = 'ratio' | 'slack';

/** The rule a fixture (by its recorded name) falls under in this policy, or null when the policy does not judge it. */
export function ruleFor(g: GateContext, fixtureName: string): SpeedRule | null {
  if (g.policy.fixtures.ratio.some((s) => matchesFixture(s, fixtureName))) return 'ratio';
  if (g.policy.fixtures.slack.some((s) => matchesFixture(s, fixtureName))) return 'slack';
  return null;
}

/** The fixtures (labels) the candidate ran for `workload` on a testbed, with the rule each falls under. */
function fixturesRun(g: GateContext, testbed: string, workload: string): { label: string; rule: SpeedRule | null }[] {
  const labels = new Set(
    g.data.cells
      .filter(
        (c) =>
          c.testbed === testbed &&
          c.backend === g.candidate &&
          c.workload === workload &&
          c.completed + c.mismatch + c.failed + c.timeout > 0,
      )
      .map((c) => c.fixture),
  );
  return [...labels].sort().map((label) => {
    const info = g.data.fixtures.find((f) => f.label === label && f.workload === workload);
    return { label, rule: ruleFor(g, info?.name ?? label) };
  });
}

function comparison(g: GateContext, testbed: string, workload: string, fixture: string, phase: string): Comparison | undefined {
  return g.data.comparisons.find(
    (c) => c.testbed === testbed && c.backend === g.candidate && c.workload === workload && c.fixture === fixture && c.phase === phase,
  );
}

function rulePhases(g: GateContext, rule: SpeedRule): string[] {
  return rule === 'ratio' ? g.policy.speedup.phases : g.policy.slack.phases;
}

/**
 * Blocks per testbed, workload and judged fixture: a testbed is complete when, for every workload,
 * some fixture the policy judges ran there and every such fixture has enough paired blocks.
 */
export function blockFindings(g: GateContext, counted: Testbed[]): Testbed[] {
  const { policy } = g;
  const complete: Testbed[] = [];
  for (const t of counted) {
    let ok = true;
    for (const w of policy.workloads) {
      const judged = fixturesRun(g, t.id, w).filter((f) => f.rule !== null);
      if (judged.length === 0) {
        ok = false;
        g.add(
          'blocks',
          'hold',
          `${t.id} workload ${w}: 0 of ${policy.minBlocksPerWorkloadAndHost} paired measured blocks: no fixture the policy judges ran here`,
          t.id,
        );
      }
      for (const f of judged) {
        const blocks = Math.min(...rulePhases(g, f.rule!).map((p) => comparison(g, t.id, w, f.label, p)?.blocks ?? 0));
        if (blocks < policy.minBlocksPerWorkloadAndHost) {
          ok = false;
          g.add(
            'blocks',
            'hold',
            `${t.id} workload ${w} fixture ${f.label}: ${blocks} of ${policy.minBlocksPerWorkloadAndHost} paired measured blocks against ${policy.baseline}: ${policy.minBlocksPerWorkloadAndHost - blocks} more needed`,
            t.id,
          );
        }
      }
    }
    if (ok) {
      complete.push(t);
      g.add(
        'blocks',
        'met',
        `${t.id}: at least ${policy.minBlocksPerWorkloadAndHost} paired blocks for every judged fixture of ${policy.workloads.join(', ')}`,
        t.id,
      );
    }
  }
  return complete;
}

/** Speed per counted testbed, workload and fixture: ratio fixtures by speed-up and no-slowdown, tiny ones by the slack rule. */
export function speedupFindings(g: GateContext, counted: Testbed[]): void {
  for (const t of counted) {
    for (const w of g.policy.workloads) {
      for (const f of fixturesRun(g, t.id, w)) {
        if (f.rule === 'ratio') {
          for (const p of g.policy.speedup.phases) speedupFinding(g, t.id, w, f.label, p);
          for (const p of g.policy.speedup.noSlowdownPhases) slowdownFinding(g, t.id, w, f.label, p);
        } else if (f.rule === 'slack') {
          for (const p of g.policy.slack.phases) slackFinding(g, t.id, w, f.label, p);
        } else {
          g.add(
            'speedup',
            'met',
            `${t.id} ${w} fixture ${f.label}: not named by the policy's speed rules; shown in the report, not judged`,
            t.id,
          );
        }
      }
    }
  }
}

function speedupFinding(g: GateContext, testbed: string, w: string, fixture: string, p: string): void {
  const { policy } = g;
  const max = policy.speedup.maxRatioUpper95;
  const c = comparison(g, testbed, w, fixture, p);
  const where = `${testbed} ${w} ${fixture} ${p}`;
  if (!c || !c.ci || c.medianRatio === null)
    g.add('speedup', 'hold', `${where}: no ratio interval (${c?.blocks ?? 0} paired blocks)`, testbed);
  else if (c.blocks < policy.minBlocksPerWorkloadAndHost) {
    // A bootstrap interval from a handful of blocks is too unstable to reject on.
    g.add(
      'speedup',
      'hold',
      `${where}: median ratio ${fmtRatio(c.medianRatio)} from ${c.blocks} of ${policy.minBlocksPerWorkloadAndHost} blocks; judged once the blocks are there`,
      testbed,
    );
  } else if (c.ci.upper < max) {
    g.add(
      'speedup',
      'met',
      `${where}: median ratio ${fmtRatio(c.medianRatio)}, 95% CI [${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}] below ${max}`,
      testbed,
    );
  } else if (c.ci.lower >= max) {
    g.add(
      'speedup',
      'reject',
      `${where}: median ratio ${fmtRatio(c.medianRatio)}, 95% CI [${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}] lies wholly at or above ${max}: the required speed-up is excluded`,
      testbed,
    );
  } else {
    g.add(
      'speedup',
      'hold',
      `${where}: 95% CI [${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}] reaches ${max}; more blocks needed to show the speed-up`,
      testbed,
    );
  }
}

function slowdownFinding(g: GateContext, testbed: string, w: string, fixture: string, p: string): void {
  const c = comparison(g, testbed, w, fixture, p);
  if (!c || c.blocks === 0) return;
  const where = `${testbed} ${w} ${fixture} ${p}`;
  if (c.verdict === 'slower') {
    g.add(
      'slowdown',
      'reject',
      `${where}: significantly slower than ${g.policy.baseline} (median ratio ${fmtRatio(c.medianRatio!)}, p = ${c.permutation!.p.toPrecision(2)})`,
      testbed,
    );
  } else g.add('slowdown', 'met', `${where}: not significantly slower (median ratio ${fmtRatio(c.medianRatio!)}, ${c.words})`, testbed);
}

const ms = (x: number) => `${x.toFixed(1)} ms`;

/** A tiny fixture: the median paired difference's 95% upper bound must stay within the slack. */
function slackFinding(g: GateContext, testbed: string, w: string, fixture: string, p: string): void {
  const { policy } = g;
  const max = policy.slack.maxSlowerMs;
  const c = comparison(g, testbed, w, fixture, p);
  const where = `${testbed} ${w} ${fixture} ${p}`;
  const ci = c?.differenceCi;
  if (!c || !ci || c.medianDifferenceMs === null)
    g.add('slack', 'hold', `${where}: no difference interval (${c?.blocks ?? 0} paired blocks)`, testbed);
  else if (c.blocks < policy.minBlocksPerWorkloadAndHost)
    g.add(
      'slack',
      'hold',
      `${where}: median ${ms(c.medianDifferenceMs)} slower from ${c.blocks} of ${policy.minBlocksPerWorkloadAndHost} blocks; judged once the blocks are there`,
      testbed,
    );
  else if (ci.upper <= max)
    g.add(
      'slack',
      'met',
      `${where}: median difference ${ms(c.medianDifferenceMs)}, 95% CI [${ms(ci.lower)}, ${ms(ci.upper)}], within ${max} ms of ${policy.baseline}`,
      testbed,
    );
  else if (ci.lower > max)
    g.add(
      'slack',
      'reject',
      `${where}: median difference ${ms(c.medianDifferenceMs)}, 95% CI [${ms(ci.lower)}, ${ms(ci.upper)}]: more than ${max} ms slower than ${policy.baseline}`,
      testbed,
    );
  else g.add('slack', 'hold', `${where}: 95% CI [${ms(ci.lower)}, ${ms(ci.upper)}] reaches ${max} ms; more blocks needed`, testbed);
}
