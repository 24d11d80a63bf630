// Randomized complete blocks: each block runs every backend of the plan once for one workload, in
// an order shuffled from the plan's seed. The schedule depends only on the plan and the seed (not on
// which backends this host can run), so the same seed replays the same order on every host.
import { createRandom, shuffled } from './prng.js';

export interface ScheduledCase {
  /** `b<block>-p<position>`. */
  id: string;
  block: number;
  position: number;
  warmup: boolean;
  backend: string;
  workload: string;
}

export interface ScheduledBlock {
  index: number;
  workload: string;
  warmup: boolean;
  order: string[];
  cases: ScheduledCase[];
}

export interface ScheduleInput {
  backends: readonly string[];
  workloads: readonly string[];
  blocks: number;
  warmupBlocks: number;
  seed: number;
}

/**
 * Round r (warm-up rounds first) holds one block per workload; the workload order of each round
 * and the backend order of each block are drawn from one PRNG stream, in that sequence.
 */
export function buildSchedule(input: ScheduleInput): ScheduledBlock[] {
  const random = createRandom(input.seed);
  const out: ScheduledBlock[] = [];
  const rounds = input.warmupBlocks + input.blocks;
  for (let r = 0; r < rounds; r++) {
    const warmup = r < input.warmupBlocks;
    for (const workload of shuffled(input.workloads, random)) {
      const index = out.length;
      const order = shuffled(input.backends, random);
      out.push({
        index,
        workload,
        warmup,
        order,
        cases: order.map((backend, position) => ({ id: `b${index}-p${position}`, block: index, position, warmup, backend, workload })),
      });
    }
  }
  return out;
}
