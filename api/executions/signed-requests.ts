import type { ApiConfig } from '../../config/config';
import { executionWorkflowId } from '../../contracts/temporal';
import { decodeKey, decodeSignature, toHex } from '../../domain/encoding';
import { badRequest, signatureRefused } from '../../domain/errors';
import { BoundedMap } from '../http/bounded-map';
import { verifyEd25519 } from './ed25519';
import type { ExecutionRecords } from './records';
import type { SubmitRequest } from './request-schemas';

/** What never changes after prepare, so the submit path can skip a query for it. */
export interface ExecutionFacts {
  signerPublicKey: string;
  intentHash: string;
}

/** What a signed request (submit, cancel) carries: the signer key, its signature, the wallet's envelope. */
export type SignedBody = Pick<SubmitRequest, 'publicKey' | 'signature' | 'connectEnvelope'>;

const CACHE_MAX = 50_000;

/**
 * The wallet's signed requests, checked here with node:crypto before anything reaches the workflow:
 * the workflow sandbox cannot run node:crypto, and the facts a verification needs (signer key,
 * intentHash) are fixed at prepare time and cached per execution.
 */
export class SignedRequests {
  private readonly facts = new BoundedMap<string, ExecutionFacts>(CACHE_MAX);

  constructor(
    private readonly records: ExecutionRecords,
    private readonly config: ApiConfig,
    private readonly clock: () => number,
  ) {}

  /** Remembers a prepared execution's facts (prepare knows them without a query). */
  remember(workflowId: string, facts: ExecutionFacts): void {
    this.facts.set(workflowId, facts);
  }

  /**
   * Checks the envelope (the wallet's address, an allowed domain, a recent timestamp), that the key
   * is the execution's signer key and that the signature verifies over `message(facts)`; 400 when
   * any does not. Answers the signer key (canonical hex), the signature and the message.
   */
  async verify(
    wallet: string,
    executionId: string,
    body: SignedBody,
    message: (facts: ExecutionFacts) => string,
  ): Promise<{ publicKey: string; signature: Uint8Array; message: string }> {
    const envelope = body.connectEnvelope;
    const key = decodeKey(body.publicKey);
    const signature = decodeSignature(body.signature);
    if (envelope.address !== wallet) throw badRequest('connectEnvelope.address does not match the wallet');
    if (!this.config.allowedDomains.includes(envelope.domain)) throw badRequest('connectEnvelope.domain is not allowed');
    const ageS = Math.abs(this.clock() / 1000 - envelope.timestamp);
    if (ageS > this.config.envelopeMaxAgeS)
      throw badRequest(`connectEnvelope.timestamp is more than ${this.config.envelopeMaxAgeS} s from now`);

    const facts = await this.factsOf(wallet, executionId);
    const publicKey = toHex(key);
    if (publicKey !== facts.signerPublicKey) throw signatureRefused('publicKey is not the signer key of this execution');
    const text = message(facts);
    if (!verifyEd25519(new TextEncoder().encode(text), signature, key)) throw signatureRefused('signature does not verify');
    return { publicKey, signature, message: text };
  }

  private async factsOf(wallet: string, executionId: string): Promise<ExecutionFacts> {
    const workflowId = executionWorkflowId(wallet, executionId);
    const cached = this.facts.get(workflowId);
    if (cached) return cached;
    const record = await this.records.get(wallet, executionId);
    const facts = { signerPublicKey: record.signerPublicKey, intentHash: record.intentHash };
    this.facts.set(workflowId, facts);
    return facts;
  }
}
