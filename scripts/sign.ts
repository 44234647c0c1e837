import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import nacl from 'tweetnacl';
import { nacl25519Signer, signSubmitSync } from '@intent-service/client';
import { toBase58, toHex } from '../domain/encoding';

const USAGE = `usage:
  npm run --silent sign -- keygen                       prints {"secretKey","publicKeyBase58","publicKeyHex"}
  npm run --silent sign -- --secret-key 0xHEX|BASE58 --wallet W --execution-id ID --domain D
                           (--intent JSON | --intent-file F) [--timestamp UNIX_S] [--encoding hex|base58]
prints a ready body for POST /api/v1/executions/{wallet}/submit`;

/** Operators' tool: sign an execution's intent the way a wallet frontend does (the SDK's signing). */
function main(): number {
  const argv = process.argv.slice(2);
  if (argv[0] === 'keygen') {
    const pair = nacl.sign.keyPair();
    process.stdout.write(
      JSON.stringify({ secretKey: toHex(pair.secretKey), publicKeyBase58: toBase58(pair.publicKey), publicKeyHex: toHex(pair.publicKey) }) +
        '\n',
    );
    return 0;
  }
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      'secret-key': { type: 'string' },
      wallet: { type: 'string' },
      'execution-id': { type: 'string' },
      domain: { type: 'string' },
      intent: { type: 'string' },
      'intent-file': { type: 'string' },
      timestamp: { type: 'string' },
      encoding: { type: 'string' },
    },
  });
  const secret = values['secret-key'];
  if (!secret || !values.wallet || !values['execution-id'] || !values.domain || !(values.intent || values['intent-file'])) {
    process.stderr.write(USAGE + '\n');
    return 2;
  }
  // A 64-byte tweetnacl secret key or a 32-byte seed, as 0x-hex or base58.
  const signer = nacl25519Signer(secret);
  const intent = JSON.parse(values.intent ?? readFileSync(values['intent-file']!, 'utf8'));
  const encoding = values.encoding === 'base58' ? 'base58' : 'hex';
  const timestamp = values.timestamp ? Number(values.timestamp) : Math.floor(Date.now() / 1000);
  const body = signSubmitSync(signer, {
    wallet: values.wallet,
    executionId: values['execution-id'],
    intent,
    domain: values.domain,
    timestamp,
    encoding,
  });
  process.stdout.write(JSON.stringify(body) + '\n');
  return 0;
}

try {
  process.exitCode = main();
} catch (err) {
  process.stderr.write(`sign: ${(err as Error).message}\n`);
  process.exitCode = 2;
}
