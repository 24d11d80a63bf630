// The typed registry of workloads: plans, the harness and reports take workload names from here.
// One line per workload module; the scheduler never changes when a workload is added.
import { npmLane, pnpmLane } from './dev-lane/dev-lane.js';
import { agentWorkload } from './agent/agent.js';
import { devServersWorkload } from './dev-servers/dev-servers.js';
import { fileopsWorkload } from './fileops/fileops.js';
import { realAgentsAcpWorkload, realAgentsWorkload } from './real-agents/real-agents.js';
import { repoWorkload } from './repo/repo.js';
import { twoAgentWorkload } from './two-agent/two-agent.js';
import type { Workload } from './types.js';

export const WORKLOADS = {
  agent: agentWorkload,
  fileops: fileopsWorkload,
  'two-agent': twoAgentWorkload,
  'npm-lane': npmLane,
  'pnpm-lane': pnpmLane,
  repo: repoWorkload,
  'dev-servers': devServersWorkload,
  'real-agents': realAgentsWorkload,
  'real-agents-acp': realAgentsAcpWorkload,
} as const satisfies Record<string, Workload>;

export type WorkloadName = keyof typeof WORKLOADS;

export function isWorkloadName(name: string): name is WorkloadName {
  return Object.hasOwn(WORKLOADS, name);
}
