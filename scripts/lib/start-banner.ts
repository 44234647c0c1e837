/** What `npm start` knows once every part is up: the lines of its banner are made from it. */
export interface StartBannerFacts {
  apiUrl: string;
  operator?: { host: string; port: number };
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  uiUrl?: string;
  workerVersion?: { deploymentName: string; buildId: string };
  promote?: 'current' | 'none';
  storageNodes: readonly string[];
  chainUrl: string;
  depositSeedFile: string;
  testToken?: { symbol: string; address: string };
  /** The gas account `npm start` gave its own chain (token refunds' fees). */
  gasAccount?: { address: string; keyFile: string };
  keysFile: string;
  tokensFile: string;
}

/** The banner `npm start` prints once the stack is up (README "The two commands" shows it). */
export function startBanner(f: StartBannerFacts): string[] {
  return [
    'intent-service is up',
    `  API           ${f.apiUrl}   (try: curl ${f.apiUrl}/healthz)`,
    f.operator ? `  operator      http://${f.operator.host}:${f.operator.port}/metrics and /readyz` : '  operator      (off)',
    `  Temporal      ${f.temporalAddress}   namespace ${f.namespace}, task queue ${f.taskQueue}`,
    f.uiUrl ? `  Temporal UI   ${f.uiUrl}` : '  Temporal UI   (external cluster)',
    f.workerVersion
      ? `  worker        version ${f.workerVersion.deploymentName} ${f.workerVersion.buildId}${f.promote === 'current' ? ', current' : ', to be made current (WORKER_PROMOTE=none)'}   (rollouts: docs/production.md)`
      : '  worker        unversioned (WORKER_VERSIONING=off)',
    `  storage nodes ${f.storageNodes.join(' ')}`,
    `  chain         ${f.chainUrl}   (deposits: npm run --silent deposit -- --to ADDRESS --amount WEI; seed ${f.depositSeedFile})`,
    ...(f.testToken
      ? [
          `  token ${f.testToken.symbol}    ${f.testToken.address}   (deposits: npm run --silent deposit -- --to ADDRESS --amount N --token ${f.testToken.symbol})`,
        ]
      : []),
    ...(f.gasAccount ? [`  gas account   ${f.gasAccount.address}   (pays token refunds' fees; key ${f.gasAccount.keyFile})`] : []),
    `  node keys     ${f.keysFile}`,
    `  tokens        ${f.tokensFile}   (npm run --silent token -- create --id NAME --scope SCOPE)`,
    'Ctrl-C stops everything.',
  ];
}
