import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../config/config';

/**
 * The Solidity contracts of solidity/ (a test token and a forwarder for local chains), compiled by
 * the npm `solc` this repository pins (its soljson is in the package: nothing is downloaded). The
 * compiled artifacts are committed in solidity/artifacts.json, written by `npm run solidity:build`;
 * test/unit/solidity.test.ts compiles the sources again and compares.
 */

/** The folder of the sources and of the committed artifacts. */
export const SOLIDITY_DIR = path.join(projectRoot, 'solidity');
export const ARTIFACTS_FILE = path.join(SOLIDITY_DIR, 'artifacts.json');

/** The sources compiled, by file name, and the contract each holds. */
export const SOLIDITY_SOURCES = { 'TestToken.sol': 'TestToken', 'Forwarder.sol': 'Forwarder', 'Sprayer.sol': 'Sprayer' } as const;

export type ContractName = (typeof SOLIDITY_SOURCES)[keyof typeof SOLIDITY_SOURCES];

export interface ContractArtifact {
  abi: unknown[];
  /** Creation bytecode, `0x` hex. */
  bytecode: `0x${string}`;
}

export interface Artifacts {
  compiler: string;
  contracts: Record<ContractName, ContractArtifact>;
}

/** The compiler settings: fixed, so that the same sources give the same bytecode. */
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  metadata: { bytecodeHash: 'none' },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
};

interface SolcOutput {
  errors?: Array<{ severity: string; formattedMessage: string }>;
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
}

/** Compiles the sources with the pinned solc (a few seconds: soljson is WebAssembly-compiled JavaScript). */
export function compileSolidity(): Artifacts {
  // Loaded here only: the service never needs it, and its load takes a while.
  const solc = require('solc') as { version(): string; compile(input: string): string };
  const sources = Object.fromEntries(
    Object.keys(SOLIDITY_SOURCES).map((file) => [file, { content: fs.readFileSync(path.join(SOLIDITY_DIR, file), 'utf8') }]),
  );
  const output = JSON.parse(solc.compile(JSON.stringify({ language: 'Solidity', sources, settings: SETTINGS }))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc: ${errors.map((e) => e.formattedMessage).join('\n')}`);
  const contracts = {} as Record<ContractName, ContractArtifact>;
  for (const [file, name] of Object.entries(SOLIDITY_SOURCES)) {
    const c = output.contracts[file][name];
    contracts[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  }
  return { compiler: solc.version(), contracts };
}

/** The committed artifacts (solidity/artifacts.json). */
export function readArtifacts(): Artifacts {
  return JSON.parse(fs.readFileSync(ARTIFACTS_FILE, 'utf8')) as Artifacts;
}
