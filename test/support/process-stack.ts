import { ProcessStack as StackOfProcesses, type ProcessStackOptions } from '../../scripts/lib/stack/process-stack';
import { FAULTY_NODE_SCRIPT } from './faulty-storage-node';
import { notPinoLines } from './log-lines';
import { testNodeKeysFile } from './node-keys';
import { TEST_TEMPORAL, testCluster } from './temporal-target';
import { sharedBundleEnv } from './workflow-bundle-dir';

/**
 * The fault tests' stack of processes (scripts/lib/stack/process-stack.ts), separate from the
 * shared test stack so that killing and restarting its parts disturbs no other test: its storage
 * nodes are the build with faults and sign with the test keys, its workers share the run's
 * workflow bundle, and with TEST_TEMPORAL=cluster it runs on the run's test cluster.
 */
export class ProcessStack extends StackOfProcesses {
  /**
   * What the worker and the API processes wrote (stdout and stderr): how many lines, and those that
   * are not pino's JSON (test/support/log-lines.ts), each after `[name] `. Every test of a process
   * stack can hold its run to one log format.
   */
  readonly log: { lines: number; notPino: string[] };

  /** `env`: more settings for the worker and the API (a chain's, for example); `nodeEnv`: for the storage nodes (OTEL_*); `onLine`: hears the worker's and the API's output. */
  constructor(options: Pick<ProcessStackOptions, 'env' | 'nodeEnv' | 'nodes' | 'onLine'> = {}) {
    const log = { lines: 0, notPino: [] as string[] };
    super({
      ...(options.nodes ? { nodes: options.nodes } : {}),
      onLine: (name, line) => {
        log.lines++;
        if (notPinoLines([line]).length > 0) log.notPino.push(`[${name}] ${line}`);
        options.onLine?.(name, line);
      },
      // One copy per entry unless a test asks for more (`env.STORAGE_REPLICAS`): the fault tests
      // written for one owner per entry keep their meaning.
      env: { ...sharedBundleEnv(), STORAGE_REPLICAS: '1', ...options.env },
      ...(options.nodeEnv ? { nodeEnv: options.nodeEnv } : {}),
      nodeScript: FAULTY_NODE_SCRIPT,
      keysFile: testNodeKeysFile(),
      ...(TEST_TEMPORAL === 'cluster' ? { cluster: testCluster } : {}),
    });
    this.log = log;
  }
}
