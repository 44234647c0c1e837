import assert from 'node:assert/strict';
import { compileSolidity, readArtifacts } from '../../scripts/lib/solidity';

describe('solidity/ artifacts', function () {
  this.timeout(60_000);

  it('when the sources are compiled again by the pinned solc, then the committed artifacts are exactly what it answers', () => {
    const fresh = compileSolidity();
    const committed = readArtifacts();
    assert.equal(committed.compiler, fresh.compiler);
    assert.deepEqual(committed.contracts, fresh.contracts, 'solidity/artifacts.json is stale: run npm run solidity:build');
    assert.match(fresh.contracts.TestToken.bytecode, /^0x[0-9a-f]{200,}$/);
  });
});
