import path from 'node:path';
import proxyaddr from 'proxy-addr';
import { ConfigError } from './config-error';
import { projectRoot } from './project-root';
import { parseAssetAmounts, type AssetAmounts } from './refund-limits';

/**
 * The `toConfig` functions of the settings table's rows: each turns a setting's value into the
 * value of the `Config` field it fills, and fails with a ConfigError naming the setting when the
 * value is wrong in a way its kind cannot say.
 */

/** An http(s) URL without its trailing slashes. */
export function httpUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name}: ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name}: ${value} must be http(s)`);
  return value.replace(/\/+$/, '');
}

/** STORAGE_NODES: http(s) URLs, none twice; an empty list is none (`npm start` runs local nodes). */
export function storageNodeUrls(list: readonly string[] | undefined): readonly string[] | undefined {
  const nodes = list?.map((n) => httpUrl('STORAGE_NODES', n));
  if (nodes && new Set(nodes).size !== nodes.length) throw new ConfigError('STORAGE_NODES lists the same node twice');
  return nodes && nodes.length > 0 ? nodes : undefined;
}

/** A file path, absolute (a relative one is relative to the project's root). */
export const inProject = (file: string): string => path.resolve(projectRoot, file);

/** A file path that may be unset, absolute when set. */
export const inProjectIfSet = (file: string | undefined): string | undefined => (file === undefined ? undefined : inProject(file));

/** TRUST_PROXY: what proxy-addr understands. */
export function trustedProxies(list: readonly string[]): readonly string[] {
  try {
    proxyaddr.compile([...list]);
  } catch (err) {
    throw new ConfigError(`TRUST_PROXY: ${(err as Error).message} (expected IPs, CIDRs, loopback, linklocal or uniquelocal)`);
  }
  return list;
}

/** CORS_ORIGINS: exact origins (scheme://host[:port]), as browsers send them. */
export function exactOrigins(list: readonly string[]): readonly string[] {
  for (const origin of list) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new ConfigError(`CORS_ORIGINS: ${JSON.stringify(origin)} is not an origin`);
    }
    if (url.origin !== origin) throw new ConfigError(`CORS_ORIGINS: ${JSON.stringify(origin)} is not an origin (expected ${url.origin})`);
  }
  return list;
}

/** CHAIN_RPC_URL (read only when it is set: it turns the chain on). */
export const chainRpcUrl = (value: string): string => httpUrl('CHAIN_RPC_URL', value);

/** REFUND_LIMITS as set, in base units (config/refund-limits.ts adds the defaults). */
export const refundLimits = (text: string | undefined): AssetAmounts => parseAssetAmounts('REFUND_LIMITS', text);

/** REFUND_MINIMUMS as set, in base units. */
export const refundMinimums = (text: string | undefined): AssetAmounts => parseAssetAmounts('REFUND_MINIMUMS', text);

/** A setting in seconds kept in milliseconds. */
export const secondsToMs = (seconds: number): number => 1000 * seconds;

/** A port that may be `off`: undefined then. */
export const offIsNone = (port: number | 'off'): number | undefined => (port === 'off' ? undefined : port);

/** The block explorers known without CHAIN_EXPLORERS (Etherscan's, for the chains whose confirmations are known); none for dev chains. */
export const DEFAULT_CHAIN_EXPLORERS: Readonly<Record<string, string>> = Object.freeze({
  'evm:1': 'https://etherscan.io',
  'evm:11155111': 'https://sepolia.etherscan.io',
  'evm:17000': 'https://holesky.etherscan.io',
});

/** CHAIN_EXPLORERS over the defaults: chain → base URL (https, no trailing slash); `none` removes a chain's. */
export function chainExplorers(text: string | undefined): Readonly<Record<string, string>> {
  const explorers: Record<string, string> = { ...DEFAULT_CHAIN_EXPLORERS };
  for (const item of (text ?? '').split(',').map((i) => i.trim())) {
    if (item === '') continue;
    const m = /^(evm:[1-9][0-9]{0,18})=(.+)$/.exec(item);
    if (!m) throw new ConfigError(`CHAIN_EXPLORERS: ${JSON.stringify(item.slice(0, 100))} is not evm:<chainId>=<https URL or none>`);
    if (m[2] === 'none') {
      delete explorers[m[1]!];
      continue;
    }
    const url = httpUrl('CHAIN_EXPLORERS', m[2]!);
    if (!url.startsWith('https://')) throw new ConfigError(`CHAIN_EXPLORERS: ${m[2]} must be an https URL`);
    explorers[m[1]!] = url;
  }
  return explorers;
}
