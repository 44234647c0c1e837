import fs from 'node:fs';
import { ARTIFACTS_FILE, compileSolidity } from './lib/solidity';

/** `npm run solidity:build`: compiles solidity/ with the pinned solc and writes solidity/artifacts.json. */
const artifacts = compileSolidity();
fs.writeFileSync(ARTIFACTS_FILE, JSON.stringify(artifacts, null, 2) + '\n');
process.stdout.write(`${ARTIFACTS_FILE}: ${Object.keys(artifacts.contracts).join(', ')} (solc ${artifacts.compiler})\n`);
