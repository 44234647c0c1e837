/**
 * The signer service as the worker asks it (`npm run signer`, scripts/signer.ts): HTTP on the
 * loopback, the worker proving itself with the secret of SIGNER_TOKEN_FILE. The worker holds no
 * key: the service signs only what the refunds ledger says (domain/sign-request.ts), and answers
 * 403 otherwise.
 */
import type { Hex } from 'viem';
import type { DepositKeyRef, SignRequest } from '../domain/sign-request';
import { readPrivateFile } from './secret-file';
import type { Signer } from './signer';

/** How long one call to the signer may take before the activity attempt fails (and is retried). */
const CALL_TIMEOUT_MS = 10_000;

export class RemoteSigner implements Signer {
  private readonly token: string;

  /** Reads the token file now: missing or open to others, the worker refuses to start naming it. */
  constructor(
    private readonly url: string,
    tokenFile: string,
  ) {
    this.token = readPrivateFile(tokenFile, 'signer token file').trim();
    if (this.token.length < 32) throw new Error(`the signer token file ${tokenFile} must hold at least 32 characters`);
  }

  private async call<T>(route: string, body: unknown): Promise<T> {
    const response = await fetch(new URL(route, this.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`the signer service answered ${response.status} to ${route}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }

  async depositAddress(key: DepositKeyRef): Promise<`0x${string}`> {
    return (await this.call<{ address: `0x${string}` }>('/v1/deposit-address', { key })).address;
  }

  async gasAccount(): Promise<`0x${string}` | undefined> {
    return (await this.call<{ address?: `0x${string}` }>('/v1/gas-account', {})).address;
  }

  async sign(request: SignRequest): Promise<Hex> {
    return (await this.call<{ signed: Hex }>('/v1/sign', request)).signed;
  }
}
