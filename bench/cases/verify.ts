import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import nacl from 'tweetnacl';
import { verifyEd25519 } from '../../api/executions/ed25519';
import { round } from '../stats';

// Case 2: the verify path we ship (api/executions/ed25519.ts: S < L check, small-order key check, cached
// KeyObject, OpenSSL) against bare crypto.verify with a KeyObject made once, and against tweetnacl,
// on the same signed messages. CPU only, in this process; rounds alternate between the three.

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const INPUTS = 64;

export interface VerifyResult {
  shippedOpsPerSec: number;
  bareCryptoOpsPerSec: number;
  tweetnaclOpsPerSec: number;
}

interface Input {
  message: Uint8Array;
  signature: Uint8Array;
  publicKey: Uint8Array;
  keyObject: KeyObject;
}

function makeInputs(): Input[] {
  const pairs = Array.from({ length: 8 }, () => nacl.sign.keyPair());
  return Array.from({ length: INPUTS }, (_, i) => {
    const pair = pairs[i % pairs.length];
    const message = new TextEncoder().encode(
      `localhost asks you to sign execution bench-${i}\nWallet: w\nIntent: ${'ab'.repeat(32)}\nTimestamp: ${1700000000 + i}`,
    );
    const keyObject = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, pair.publicKey]), format: 'der', type: 'spki' });
    return { message, signature: nacl.sign.detached(message, pair.secretKey), publicKey: pair.publicKey, keyObject };
  });
}

/** Calls `fn` over the inputs for about `ms` of wall time; returns [calls, elapsed ms]. */
function spin(inputs: Input[], ms: number, fn: (x: Input) => boolean): [number, number] {
  let calls = 0;
  const t0 = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let k = 0; k < 8; k++) {
      if (!fn(inputs[calls % inputs.length])) throw new Error('a valid signature did not verify');
      calls++;
    }
    elapsed = performance.now() - t0;
  }
  return [calls, elapsed];
}

/** `rounds` rounds of `msPerRound` per verifier, interleaved; ops/s over all rounds. */
export function runVerifyCase(rounds = 3, msPerRound = 300): VerifyResult {
  const inputs = makeInputs();
  const verifiers: Record<keyof VerifyResult, (x: Input) => boolean> = {
    shippedOpsPerSec: (x) => verifyEd25519(x.message, x.signature, x.publicKey),
    bareCryptoOpsPerSec: (x) => verify(null, x.message, x.keyObject, x.signature),
    tweetnaclOpsPerSec: (x) => nacl.sign.detached.verify(x.message, x.signature, x.publicKey),
  };
  const totals = { shippedOpsPerSec: [0, 0], bareCryptoOpsPerSec: [0, 0], tweetnaclOpsPerSec: [0, 0] };
  for (const fn of Object.values(verifiers)) spin(inputs, 50, fn); // warm-up (JIT)
  for (let r = 0; r < rounds; r++) {
    for (const [name, fn] of Object.entries(verifiers) as Array<[keyof VerifyResult, (x: Input) => boolean]>) {
      const [calls, ms] = spin(inputs, msPerRound, fn);
      totals[name][0] += calls;
      totals[name][1] += ms;
    }
  }
  const opsPerSec = ([calls, ms]: number[]) => round((calls * 1000) / ms, 0);
  return {
    shippedOpsPerSec: opsPerSec(totals.shippedOpsPerSec),
    bareCryptoOpsPerSec: opsPerSec(totals.bareCryptoOpsPerSec),
    tweetnaclOpsPerSec: opsPerSec(totals.tweetnaclOpsPerSec),
  };
}
