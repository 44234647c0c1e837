import { readFileSync } from 'node:fs';
import type { ApiConfig, WorkerConfig } from './config';

/**
 * Connection options for a Temporal frontend, shared by the API's client and the worker: plain on
 * loopback, TLS (mTLS with a client pair, or server-only) and/or an API key for a remote cluster.
 */
export function temporalConnectionOptions(config: ApiConfig | WorkerConfig, address: string) {
  const { tls, apiKey } = config.temporal;
  return {
    address,
    apiKey,
    tls: tls
      ? {
          serverNameOverride: tls.serverName,
          serverRootCACertificate: tls.caPath ? readFileSync(tls.caPath) : undefined,
          clientCertPair: tls.certPath && tls.keyPath ? { crt: readFileSync(tls.certPath), key: readFileSync(tls.keyPath) } : undefined,
        }
      : undefined,
  };
}
