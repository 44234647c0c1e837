import {
  runCachePressure as runOnStack,
  type CachePressureOptions,
  type CachePressureReport,
} from '../../scripts/lib/stress/cache-pressure';
import { ProcessStack } from '../support/process-stack';

export type { CachePressureOptions, CachePressureReport } from '../../scripts/lib/stress/cache-pressure';

/** The cache pressure run (scripts/lib/stress/cache-pressure.ts) on the tests' process stack. */
export function runCachePressure(options: CachePressureOptions): Promise<CachePressureReport> {
  return runOnStack({ ...options, makeStack: (stackOptions) => new ProcessStack(stackOptions) });
}
