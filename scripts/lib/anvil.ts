import path from 'node:path';
import { startChildService, type ChildService } from './child-service';

/** anvil's first funded dev account (its well-known mnemonic "test test … junk"); on a dev chain only. */
export const ANVIL_DEV_ACCOUNT = {
  address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
} as const;

/**
 * Anvil's second funded dev account (of its public test mnemonic): the gas account of `npm
 * start`'s chain and of the tests (it pays token refunds' fees); nothing else sends from it.
 */
export const ANVIL_GAS_ACCOUNT = {
  address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
} as const;

/** The anvil binary of the npm package's platform package (`@foundry-rs/anvil-<os>-<arch>`), without its node wrapper. */
export function anvilBinary(): string {
  const os = { linux: 'linux', darwin: 'darwin', win32: 'win32' }[process.platform as string];
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  if (!os || !arch)
    throw new Error(`anvil from npm has no build for ${process.platform}-${process.arch}; set CHAIN_RPC_URL to a chain's node`);
  const pkg = `@foundry-rs/anvil-${os}-${arch}`;
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
  } catch {
    throw new Error(`${pkg} is not installed (npm ci installs it with @foundry-rs/anvil); or set CHAIN_RPC_URL to a chain's node`);
  }
}

export interface AnvilProcess extends ChildService {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
}

/**
 * Starts a local anvil chain on 127.0.0.1 (`port` 0: any free one) and waits until it listens.
 * `blockTime` seconds: a block every that often; unset: a block per transaction (automine), and
 * tests mine with `evm_mine`. Its state lives in memory: a restart is a new chain.
 */
export async function startAnvil(options: {
  port: number;
  blockTime?: number;
  echo?: boolean;
  extraArgs?: string[];
}): Promise<AnvilProcess> {
  const args = [
    '--host',
    '127.0.0.1',
    '--port',
    String(options.port),
    ...(options.blockTime ? ['--block-time', String(options.blockTime)] : []),
  ];
  const service = startChildService('anvil', anvilBinary(), [...args, ...(options.extraArgs ?? [])], {
    readyPattern: /Listening on (\S+:\d+)/,
    echo: options.echo ?? false,
    readyTimeoutMs: 20_000,
  });
  const match = await service.ready;
  return Object.assign(service, { url: `http://${match[1]}` });
}

/** The local chain's port for `npm start` and `npm run cluster`: anvil's own default, which `npm run deposit` uses too. */
export const LOCAL_CHAIN_PORT = 8545;

/**
 * The launchers' local chain: anvil on LOCAL_CHAIN_PORT with a block a second, its blocks kept in
 * `stateFile` (dumped every 5 s and on exit) so that the chain watcher's durable cursor and block
 * hashes stay valid across restarts.
 */
export function startLocalChain(stateFile: string): Promise<AnvilProcess> {
  return startAnvil({ port: LOCAL_CHAIN_PORT, blockTime: 1, extraArgs: ['--state', stateFile, '--state-interval', '5'] });
}
