import { stopStack } from './stack';

/** Mocha root hooks: the shared stack (started lazily by the tests that need it) is stopped once at the end. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopStack();
  },
};
