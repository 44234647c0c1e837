import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config';
import { createToken, listTokens, revokeToken } from '../tokens/token-store';

const USAGE = `usage:
  npm run --silent token -- create --id NAME --scope SCOPE [--scope SCOPE ...]   prints the new token, nothing else
  npm run --silent token -- revoke --id NAME
  npm run --silent token -- list
scopes: executions:prepare, executions:deposit,
  whitelist:*, whitelist:{developer|user}:*, whitelist:{developer|user}:{add|remove}, whitelist:read, whitelist:audit,
  refunds:read, refunds:write, refunds:approve
the tokens file is API_TOKENS_FILE (default data/tokens.json); it keeps only SHA-256 hashes`;

function main(): number {
  const [command, ...rest] = process.argv.slice(2);
  const { values } = parseArgs({
    args: rest,
    options: { id: { type: 'string' }, scope: { type: 'string', multiple: true } },
    strict: true,
  });
  const file = loadConfig().apiTokensFile;
  switch (command) {
    case 'create':
      if (!values.id || !values.scope?.length) break;
      process.stdout.write(createToken(file, values.id, values.scope) + '\n');
      return 0;
    case 'revoke':
      if (!values.id) break;
      if (!revokeToken(file, values.id)) {
        process.stderr.write(`no token with id ${values.id}\n`);
        return 1;
      }
      process.stderr.write(`revoked ${values.id}\n`);
      return 0;
    case 'list':
      for (const t of listTokens(file)) process.stdout.write(`${t.id}\t${t.createdAt}\t${t.scopes.join(' ')}\n`);
      return 0;
  }
  process.stderr.write(USAGE + '\n');
  return 2;
}

try {
  process.exitCode = main();
} catch (err) {
  process.stderr.write(`token: ${(err as Error).message}\n${USAGE}\n`);
  process.exitCode = 2;
}
