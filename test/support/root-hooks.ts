import { stopStack } from './stack';
import { stopTestCluster } from './temporal-target';
import { removeSharedBundleDir } from './workflow-bundle-dir';

/** Mocha root hooks: the shared stack (started lazily by the tests that need it) is stopped once at the end, then the test cluster (TEST_TEMPORAL=cluster), then the run's shared workflow bundle. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopStack();
    await stopTestCluster();
    removeSharedBundleDir();
  },
};
