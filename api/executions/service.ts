import { randomUUID } from 'node:crypto';
import {
  Client,
  QueryRejectedError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  isGrpcServiceError,
} from '@temporalio/client';
import type { Config } from '../../config/config';
import { confirmationsFor, noConfirmationsMessage } from '../../config/confirmations';
import { intentHash as hashIntent } from '../../domain/canonical';
import { verifyEd25519, isWeakPublicKey } from './ed25519';
import { assetAllowed, reportedAsset, type DepositProof } from '../../domain/deposit-proof';
import { decodeKey, decodeSignature, toHex } from '../../domain/encoding';
import { parseEoa } from '../../domain/eoa';
import { type ServiceError, badRequest, conflict, signatureRefused, unavailable } from '../../domain/errors';
import {
  FINAL_STATUSES,
  REFUSED_DEPOSIT_MESSAGES,
  applyDeposit,
  callerWritesRecord,
  checkCancel,
  checkSubmit,
  initialRecord,
  sameTransfer,
  type Deposit,
  type DepositOutcome,
  type DepositAsset,
  type DepositTarget,
  type ExecutionRecord,
  type ExecutionStatus,
} from '../../domain/execution-state';
import { buildCancelMessage, buildSigningMessage } from '../../domain/signing-message';
import type { ExecutionStore } from '../../db/execution-store';
import type { RefundLedger } from '../../db/refund-ledger';
import { allowedToken, tokenAsset } from '../../config/deposit-tokens';
import { refundsUrl } from '../../contracts/refunds';
import { RECORD_REFUND_ROWS, refundSummary, type RefundSummary } from './refund-summary';
import { depositAddress } from '../../lib/deposit-seed';
import type { DepositDeps } from '../deps';
import { decodePageToken, encodePageToken } from '../../db/page-token';
import {
  EXECUTION_WORKFLOW_TYPE,
  ExecutionFailure,
  cancelExecutionUpdate,
  executionStatusKey,
  executionWalletKey,
  executionWorkflowId,
  getExecutionQuery,
  recordDepositUpdate,
  submitSignatureUpdate,
  type ExecutionWorkflowInput,
  type SubmitSignatureResult,
} from '../../contracts/temporal';
import { BoundedMap } from '../http/bounded-map';
import { Capacity } from './capacity';
import { READ_MODEL_RETRY_AFTER_S, fromReadModel } from '../http/read-model';
import { withinMs } from '../temporal/call';
import { mapTemporalError, updateFailureType } from '../temporal/errors';

export interface SubmitRequest {
  executionId: string;
  publicKey: string;
  signature: string;
  connectEnvelope: { address: string; domain: string; timestamp: number };
}

/** The cancel route's body: the wallet's signature of the cancel message, with its envelope. */
export interface CancelRequest {
  publicKey: string;
  signature: string;
  connectEnvelope: { address: string; domain: string; timestamp: number };
}

export interface ListRequest {
  statuses?: ExecutionStatus[];
  pageSize: number;
  pageToken?: string;
}

/**
 * A record as the read routes answer it: with the execution's row count in the refunds ledger
 * (every deposit it did not take, the ones past the record's first refusals included) and the
 * ledger query that lists them. Absent from a GET when the read model cannot be read.
 */
export type ExecutionAnswer = ExecutionRecord & { refunds?: { total: number; url: string; rows?: RefundSummary[] } };

export interface ExecutionList {
  result: ExecutionAnswer[];
  nextPageToken?: string;
}

export interface PrepareRequest {
  executionId?: string;
  intent: Record<string, unknown>;
  signerPublicKey?: string;
  ttlSeconds?: number;
  deposit?: { chain: string; asset: string; minAmount: string; refundAddress?: string };
}

/** What never changes after prepare, so the submit path can skip a query for it. */
interface ExecutionFacts {
  signerPublicKey: string;
  intentHash: string;
}

const CACHE_MAX = 50_000;

/**
 * A wallet's budget of signed actions (its rate limit). `verified` is told once the signature
 * verified; `spend` throws (429) to refuse an action that may change something; `giveBack` returns
 * what an action spent when it turned out to change nothing.
 */
export interface WalletBudget {
  verified(): void;
  spend(): Promise<void>;
  giveBack(): Promise<void>;
}
const noLimit: WalletBudget = { verified: () => undefined, spend: () => Promise.resolve(), giveBack: () => Promise.resolve() };

/** How long one Temporal call may take before the API answers 503 (outcome unknown) instead of hanging. */
const TEMPORAL_CALL_MS = 5_000;

/**
 * The execution use-cases of the HTTP API. Signatures are verified here, with node:crypto, before
 * anything reaches the workflow: the workflow sandbox cannot run node:crypto, and the facts a
 * verification needs (signer key, intentHash) are fixed at prepare time and cached per execution.
 *
 * Retries and replays write nothing (docs/decisions/0020-replays-write-nothing.md): a submit or
 * deposit the workflow already holds is rejected by its Update validator as a duplicate, which
 * leaves no history event, and answered as a success. A signature this process has already seen
 * accepted, or the read model shows, and a deposit the record holds are answered from a query
 * instead of an Update, so a flood of replays uses neither the workflow's Update budget nor its
 * few in-flight Update slots.
 */
export class ExecutionService {
  private readonly facts = new BoundedMap<string, ExecutionFacts>(CACHE_MAX);
  /** workflowId → the signature (canonical hex) that the workflow holds. */
  private readonly storedSignatures = new BoundedMap<string, string>(CACHE_MAX);

  /** The service's client, except that a query of a closed execution is refused by the server (not replayed on a worker). */
  private readonly client: Client;
  private readonly capacity: Capacity;

  constructor(
    client: Client,
    private readonly config: Config,
    private readonly store: ExecutionStore,
    private readonly refunds: RefundLedger,
    private readonly clock: () => number = Date.now,
    private readonly deposits?: DepositDeps,
  ) {
    this.client = new Client({
      connection: client.connection,
      namespace: client.options.namespace,
      interceptors: client.options.interceptors,
      workflow: { queryRejectCondition: 'NOT_OPEN' },
    });
    this.capacity = new Capacity(this.client, config, store, clock);
  }

  /**
   * The deposit target of a prepare with `deposit`: the watched chain only, the address derived
   * from the seed (the same id gives the same address) and registered in the read model before the
   * workflow starts, so the watcher can map every transfer to it, with the refund address if one is
   * named (EIP-55 checked; never a deposit address of this service, of any chain). The read model
   * or the chain's node down: 503.
   */
  private async depositTarget(
    workflowId: string,
    executionId: string,
    wanted: NonNullable<PrepareRequest['deposit']>,
  ): Promise<DepositTarget> {
    const deps = this.deposits;
    if (!deps) throw badRequest('on-chain deposits are not configured on this service (CHAIN_RPC_URL)');
    let refundAddress: string | undefined;
    if (wanted.refundAddress !== undefined) {
      const parsed = parseEoa(wanted.refundAddress);
      if (!parsed.ok) throw badRequest(`deposit.refundAddress ${parsed.reason}`);
      refundAddress = parsed.address;
    }
    let chain: string;
    try {
      chain = await deps.chain();
    } catch (err) {
      throw unavailable("the chain's node is unavailable; try again later", READ_MODEL_RETRY_AFTER_S, err);
    }
    if (wanted.chain !== chain) throw badRequest(`deposit.chain ${wanted.chain} is not watched here; this service watches ${chain}`);
    // The worker refuses to watch a chain with no number of confirmations: a deposit there would never complete.
    if (this.config.chain && confirmationsFor(this.config.chain.confirmations, chain) === undefined)
      throw badRequest(`deposit.chain ${chain} is not watched here: ${noConfirmationsMessage(chain)}`);
    let asset: DepositAsset = 'native';
    if (wanted.asset !== 'native') {
      const token = allowedToken(this.config.chain?.tokens ?? [], chain, wanted.asset);
      if (!token) throw badRequest(`deposit.asset ${wanted.asset} is not a token this service accepts on ${chain} (DEPOSIT_TOKENS)`);
      asset = tokenAsset(token.address) as DepositAsset;
    }
    const address = depositAddress(deps.seed, chain, workflowId);
    if (refundAddress !== undefined) {
      // Refunds are paid from deposit addresses: one paid to a deposit address would be taken for a deposit.
      if (refundAddress.toLowerCase() === address.toLowerCase())
        throw badRequest("deposit.refundAddress is this execution's own deposit address");
      if (await this.readModel(() => deps.store.isDepositAddress(refundAddress)))
        throw badRequest('deposit.refundAddress is a deposit address of this service');
    }
    const stored = await this.readModel(() =>
      deps.store.register({ chain, address, workflowId, minAmount: wanted.minAmount, asset, ...(refundAddress ? { refundAddress } : {}) }),
    );
    // The address was registered before (a retried prepare): where its refunds go never changes.
    if (stored.refundAddress !== refundAddress?.toLowerCase()) throw alreadyExists(executionId);
    return { chain, asset, minAmount: wanted.minAmount, address, ...(refundAddress ? { refundAddress } : {}) };
  }

  private call<R>(fn: () => Promise<R>): Promise<R> {
    return withinMs(this.client, TEMPORAL_CALL_MS, fn);
  }

  /** A read-model read whose failure is a 503: the same request may be sent again once it is back. */
  private readModel<R>(fn: () => Promise<R>): Promise<R> {
    return fromReadModel('the execution store', fn);
  }

  /**
   * Starts the execution's workflow. A retry of the same prepare (same id, intentHash, signer key,
   * ttl and deposit) answers the existing record with `replayed: true`; other content under the id
   * is 409.
   */
  async prepare(wallet: string, body: PrepareRequest): Promise<{ record: ExecutionRecord; replayed: boolean }> {
    const executionId = body.executionId ?? randomUUID();
    let key: Uint8Array;
    try {
      key = decodeKey(body.signerPublicKey ?? wallet);
    } catch (err) {
      if (body.signerPublicKey === undefined)
        throw badRequest('signerPublicKey is required when the wallet is not a base58 or 0x-hex ed25519 key');
      throw err;
    }
    if (isWeakPublicKey(key)) throw badRequest('signerPublicKey is a small-order key, which would verify any signature');
    const created = this.clock();
    const input: ExecutionWorkflowInput = {
      executionId,
      wallet,
      intent: body.intent,
      intentHash: hashIntent(body.intent),
      signerPublicKey: toHex(key),
      createdAt: new Date(created).toISOString(),
      expiresAt: new Date(created + (body.ttlSeconds ?? this.config.executionTtlSeconds) * 1000).toISOString(),
      lingerSeconds: this.config.executionLingerSeconds,
      signingDeadlineSeconds: this.config.signingDeadlineSeconds,
      webhooks: this.config.webhooks.length > 0,
    };
    const workflowId = executionWorkflowId(wallet, executionId);
    if (body.deposit) input.depositTarget = await this.depositTarget(workflowId, executionId, body.deposit);
    // An id is never used twice, not even after Temporal's retention dropped its run: the read
    // model keeps every record, so one run can never be read, signed or announced as another
    // (decision 0062). While Temporal still holds the run, its REJECT_DUPLICATE says the same.
    if (await this.readModel(() => this.store.get(wallet, executionId)))
      return { record: await this.samePrepare(wallet, input, body.ttlSeconds ?? this.config.executionTtlSeconds), replayed: true };
    // A place among the open executions first (503 or 429 beyond them): the workers never hold more
    // runs than their cache, the condition under which the Temporal core can wedge one (decision 0082).
    await this.capacity.admit(wallet, workflowId);
    try {
      await this.call(() =>
        this.client.workflow.start(EXECUTION_WORKFLOW_TYPE, {
          workflowId,
          taskQueue: this.config.temporal.taskQueue,
          args: [input],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          workflowIdConflictPolicy: 'FAIL',
          typedSearchAttributes: [
            { key: executionWalletKey, value: wallet },
            { key: executionStatusKey, value: 'PREPARED' },
          ],
        }),
      );
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError)
        return { record: await this.samePrepare(wallet, input, body.ttlSeconds ?? this.config.executionTtlSeconds), replayed: true };
      // Most likely not started: the place goes back. A start that took effect all the same is
      // counted again once its first record is projected.
      await this.capacity.release(workflowId);
      throw mapTemporalError(err, `execution ${executionId}`);
    }
    this.facts.set(workflowId, { signerPublicKey: input.signerPublicKey, intentHash: input.intentHash });
    // The workflow starts from exactly this record (same pure function, same input), and leaves
    // its write to the API (a retry of this prepare writes it again; else the worker's catch-up).
    return { record: await this.written(workflowId, initialRecord(input)), replayed: false };
  }

  /** The existing record when it was prepared with the same content; else 409. */
  private async samePrepare(wallet: string, input: ExecutionWorkflowInput, ttlSeconds: number): Promise<ExecutionRecord> {
    const existing = await this.get(wallet, input.executionId).catch((err: unknown) => {
      // Gone from Temporal and from the read model: the id is still taken (REJECT_DUPLICATE).
      if (err instanceof Error && (err as { status?: number }).status === 404) return undefined;
      throw err;
    });
    const same =
      existing !== undefined &&
      existing.intentHash === input.intentHash &&
      existing.signerPublicKey === input.signerPublicKey &&
      existing.depositTarget?.chain === input.depositTarget?.chain &&
      existing.depositTarget?.minAmount === input.depositTarget?.minAmount &&
      existing.depositTarget?.asset === input.depositTarget?.asset &&
      existing.depositTarget?.refundAddress?.toLowerCase() === input.depositTarget?.refundAddress?.toLowerCase() &&
      Date.parse(existing.expiresAt) - Date.parse(existing.createdAt) === ttlSeconds * 1000;
    if (!same) throw alreadyExists(input.executionId);
    return this.written(executionWorkflowId(wallet, input.executionId), existing);
  }

  /**
   * Writes a record this API's prepare or Update made (or was answered as already made) into the
   * read model before the client hears of it, unless the workflow writes it (callerWritesRecord):
   * a GET after the answer shows it, though the run may have closed already. The read model down is
   * 503; the change stays made, and a retry is answered as a duplicate and writes it then.
   */
  private async written(workflowId: string, record: ExecutionRecord): Promise<ExecutionRecord> {
    if (callerWritesRecord(record)) await this.readModel(() => this.store.upsert(workflowId, record));
    return record;
  }

  /**
   * The record: from the workflow while it is open (the source of truth), from the read model once
   * it has closed (it closes only after the read model holds its final record) or after the
   * namespace's retention has removed it. A closed run is never replayed on a worker to answer.
   */
  async get(wallet: string, executionId: string): Promise<ExecutionRecord> {
    const workflowId = executionWorkflowId(wallet, executionId);
    try {
      return await this.call(() => this.client.workflow.getHandle(workflowId).query(getExecutionQuery));
    } catch (err) {
      if (isNotFound(err) || err instanceof QueryRejectedError) {
        const stored = await this.readModel(() => this.store.get(wallet, executionId));
        if (stored && FINAL_STATUSES.includes(stored.status)) return stored;
        // Closed before its caller wrote the final record (the answer and the close are one
        // workflow task): the run's result is that record, read from its history.
        const final = err instanceof QueryRejectedError ? await this.closedRecord(workflowId) : undefined;
        if (final) return this.written(workflowId, final);
        if (stored) return stored;
      }
      throw mapTemporalError(err, `execution ${executionId}`);
    }
  }

  /** A closed run's final record (its result); undefined when it ended otherwise (terminated, failed). */
  private async closedRecord(workflowId: string): Promise<ExecutionRecord | undefined> {
    try {
      return await this.call(() => this.client.workflow.getHandle(workflowId).result() as Promise<ExecutionRecord>);
    } catch (err) {
      if (err instanceof WorkflowFailedError) return undefined;
      throw mapTemporalError(err, `execution ${workflowId}`);
    }
  }

  /** The record with its refunds summary and its first rows (read-model reads: throws when it is down). */
  async answer(record: ExecutionRecord): Promise<ExecutionAnswer> {
    const [answer] = await this.withRefunds([record]);
    const rows = await this.refunds.ofExecution(executionWorkflowId(record.wallet, record.executionId), RECORD_REFUND_ROWS);
    return { ...answer!, refunds: { ...answer!.refunds!, rows: rows.map(refundSummary) } };
  }

  /** One page of the wallet's executions from the read model, newest first. */
  async list(wallet: string, request: ListRequest): Promise<ExecutionList> {
    const after = request.pageToken === undefined ? undefined : decodePageToken(request.pageToken);
    if (request.pageToken !== undefined && !after) throw badRequest('pageToken is not a token this API issued');
    const page = await this.readModel(() => this.store.list(wallet, { statuses: request.statuses, pageSize: request.pageSize, after }));
    const result = await this.readModel(() => this.withRefunds(page.records));
    return page.next ? { result, nextPageToken: encodePageToken(page.next) } : { result };
  }

  /** Each record with its row count in the refunds ledger and the query that lists those rows: one read for all. */
  private async withRefunds(records: readonly ExecutionRecord[]): Promise<ExecutionAnswer[]> {
    const ids = records.map((r) => executionWorkflowId(r.wallet, r.executionId));
    const counts = await this.refunds.countsOf(ids);
    return records.map((r, i) => ({
      ...r,
      refunds: {
        // The record's own refusals count even before its projection has written them to the ledger.
        total: Math.max(counts.get(ids[i]!) ?? 0, r.refusedDeposits.length + (r.deposit?.refundDue ? 1 : 0)),
        url: refundsUrl(r.wallet, r.executionId),
      },
    }));
  }

  /**
   * Cancels on the wallet's signature of the cancel message (same envelope checks as submit).
   * Already CANCELLED answers the record and writes nothing; SIGNING or EXPIRED is 409.
   */
  async cancel(wallet: string, executionId: string, body: CancelRequest, budget: WalletBudget = noLimit): Promise<ExecutionRecord> {
    const { key, signature } = this.checkEnvelope(wallet, body);
    const facts = await this.factsOf(wallet, executionId);
    if (toHex(key) !== facts.signerPublicKey) throw signatureRefused('publicKey is not the signer key of this execution');
    const message = buildCancelMessage({
      domain: body.connectEnvelope.domain,
      executionId,
      address: wallet,
      timestamp: body.connectEnvelope.timestamp,
    });
    if (!verifyEd25519(new TextEncoder().encode(message), signature, key)) throw signatureRefused('signature does not verify');
    budget.verified();

    const refused = (status: string) => conflict(`execution is ${status} and can no longer be cancelled`, 'CANCEL_REFUSED');
    // A cancel that can change nothing (a replay of one already applied, or too late) costs the
    // wallet nothing: the read model says so without a Temporal call, the record answers.
    if (await this.readModelSays(wallet, executionId, (r) => checkCancel(r) !== 'ok')) {
      const record = await this.get(wallet, executionId);
      const check = checkCancel(record);
      if (check === 'duplicate') return record;
      if (check !== 'ok') throw refused(record.status);
    }
    await budget.spend();
    const workflowId = executionWorkflowId(wallet, executionId);
    try {
      const record = await this.call(() =>
        this.client.workflow.getHandle(workflowId).executeUpdate(cancelExecutionUpdate, { args: [{ requestedBy: 'wallet' }] }),
      );
      return await this.written(workflowId, record);
    } catch (err) {
      const failure = updateFailureType(err);
      if (failure?.type === ExecutionFailure.duplicate || failure?.type === ExecutionFailure.cancelRefused || isNotFound(err))
        await budget.giveBack();
      if (failure?.type === ExecutionFailure.duplicate) return this.written(workflowId, failure.detail as ExecutionRecord);
      if (failure?.type === ExecutionFailure.cancelRefused) throw refused(String(failure.detail));
      if (isNotFound(err)) {
        // The workflow has closed (or is gone): its record is final, so answer from it.
        const record = await this.get(wallet, executionId);
        const check = checkCancel(record);
        if (check === 'duplicate') return record;
        if (check !== 'ok') throw refused(record.status);
      }
      throw mapTemporalError(err, `execution ${executionId}`);
    }
  }

  /** The envelope checks shared by submit and cancel; the decoded key and signature. */
  private checkEnvelope(wallet: string, body: { publicKey: string; signature: string; connectEnvelope: SubmitRequest['connectEnvelope'] }) {
    const envelope = body.connectEnvelope;
    const key = decodeKey(body.publicKey);
    const signature = decodeSignature(body.signature);
    if (envelope.address !== wallet) throw badRequest('connectEnvelope.address does not match the wallet');
    if (!this.config.allowedDomains.includes(envelope.domain)) throw badRequest('connectEnvelope.domain is not allowed');
    const ageS = Math.abs(this.clock() / 1000 - envelope.timestamp);
    if (ageS > this.config.envelopeMaxAgeS)
      throw badRequest(`connectEnvelope.timestamp is more than ${this.config.envelopeMaxAgeS} s from now`);
    return { key, signature };
  }

  /**
   * Whether the read model's record of the execution satisfies `test`; false when it holds none or
   * cannot be read (the caller then goes to the workflow, which decides). Used only for facts that
   * never become false again once true (a stored signature, a final status), so a stale row can
   * only say too little.
   */
  private async readModelSays(wallet: string, executionId: string, test: (record: ExecutionRecord) => boolean): Promise<boolean> {
    try {
      const stored = await this.store.get(wallet, executionId);
      return stored !== undefined && test(stored);
    } catch {
      return false;
    }
  }

  /**
   * Stores the wallet's signature. The wallet's budget is spent only by a submit that changes the
   * record (decision 0063): one the execution already holds or refuses, which anybody can replay
   * from a GET, is answered from the record (it counts against the replaying client's own limit,
   * on the route) and gives back what it spent when only the workflow could tell.
   */
  async submit(wallet: string, body: SubmitRequest, budget: WalletBudget = noLimit): Promise<ExecutionStatus> {
    const { executionId, connectEnvelope: envelope } = body;
    const { key, signature } = this.checkEnvelope(wallet, body);

    const workflowId = executionWorkflowId(wallet, executionId);
    const facts = await this.factsOf(wallet, executionId);
    const publicKey = toHex(key);
    if (publicKey !== facts.signerPublicKey) throw signatureRefused('publicKey is not the signer key of this execution');
    const signingMessage = buildSigningMessage({
      domain: envelope.domain,
      executionId,
      address: envelope.address,
      intentHash: facts.intentHash,
      timestamp: envelope.timestamp,
    });
    if (!verifyEd25519(new TextEncoder().encode(signingMessage), signature, key)) throw signatureRefused('signature does not verify');
    budget.verified();

    const stored = toHex(signature);
    // A signature this process saw stored, or the read model shows held or refused: a replay.
    // Answered from the record, without an Update and without spending the wallet's budget.
    if (
      this.storedSignatures.get(workflowId) === stored ||
      (await this.readModelSays(wallet, executionId, (r) => checkSubmit(r, stored) !== 'ok'))
    ) {
      const record = await this.get(wallet, executionId);
      const check = checkSubmit(record, stored);
      if (check === 'duplicate') return record.status;
      if (check !== 'ok') throw SUBMIT_REFUSALS[SUBMIT_CHECK_FAILURES[check]]();
    }
    await budget.spend();
    let result: SubmitSignatureResult;
    try {
      result = await this.call(() =>
        this.client.workflow.getHandle(workflowId).executeUpdate(submitSignatureUpdate, {
          args: [
            {
              payload: {
                signature: stored,
                publicKey,
                connectEnvelope: { ...envelope },
                submittedAt: new Date(this.clock()).toISOString(),
              },
              signingMessage,
            },
          ],
        }),
      );
    } catch (err) {
      const failure = updateFailureType(err);
      // Nothing changed: the execution held it already (the read model lagged), refused it, or had closed.
      if (isNotFound(err) || failure?.type === ExecutionFailure.duplicate || SUBMIT_REFUSALS[failure?.type ?? ''] !== undefined)
        await budget.giveBack();
      if (isNotFound(err)) return this.submitToClosed(wallet, executionId, stored, err);
      if (failure?.type !== ExecutionFailure.duplicate) throw mapTemporalError(err, `execution ${executionId}`, SUBMIT_REFUSALS);
      result = failure.detail as SubmitSignatureResult;
    }
    if (result.record) await this.written(workflowId, result.record);
    this.storedSignatures.set(workflowId, stored);
    return result.status;
  }

  /**
   * A submit to an execution whose workflow has closed: answered from its final record as the open
   * workflow would have answered (the same signature again: 200; EXPIRED, CANCELLED or another
   * signature: 409). Nothing is written.
   */
  private async submitToClosed(wallet: string, executionId: string, signature: string, err: unknown): Promise<ExecutionStatus> {
    const record = await this.get(wallet, executionId);
    const check = checkSubmit(record, signature);
    if (check === 'duplicate') {
      this.storedSignatures.set(executionWorkflowId(wallet, executionId), signature);
      return record.status;
    }
    const refusal = SUBMIT_REFUSALS[SUBMIT_CHECK_FAILURES[check as Exclude<typeof check, 'duplicate' | 'ok'>]];
    throw refusal ? refusal() : mapTemporalError(err, `execution ${executionId}`);
  }

  /**
   * Records a reported deposit. Judged first on the record, by the workflow's own rule: the deposit
   * it holds again is answered as is; one it refuses is owed back (a refunds ledger row) and
   * answered 409 without reaching the workflow, so no stream of reports can grow the execution.
   * For an execution with an on-chain target the report is believed only when the chain shows the
   * transfer (domain/deposit-proof.ts), and the deposit stored is what the chain says.
   */
  async deposit(wallet: string, executionId: string, reported: Deposit): Promise<ExecutionRecord> {
    const workflowId = executionWorkflowId(wallet, executionId);
    // The read model's record, written before every answer of this API and by the workflow for what
    // else changes it: judged on a record behind the workflow's, a deposit can only go to the
    // workflow, which judges again (a deposit once held or refused stays so). Without a row: the workflow's.
    const current = (await this.readModel(() => this.store.get(wallet, executionId))) ?? (await this.get(wallet, executionId));
    // A replay of the deposit the record holds is answered from it, before anything asks the chain.
    if (current.deposit && sameTransfer(current.deposit, reported)) return current;
    this.checkAsset(reported, current.depositTarget);
    const { deposit, sender } = current.depositTarget ? await this.proven(current.depositTarget, reported) : { deposit: reported };
    const judged = applyDeposit(current, deposit, new Date(this.clock()).toISOString());
    if (judged.outcome === 'duplicate') return current;
    if (judged.outcome !== 'applied' && (judged.overflow || judged.record === current || FINAL_STATUSES.includes(current.status)))
      return this.refuseDeposit(current, deposit, judged.outcome, sender);
    let record: ExecutionRecord;
    try {
      record = await this.call(() => this.client.workflow.getHandle(workflowId).executeUpdate(recordDepositUpdate, { args: [deposit] }));
    } catch (err) {
      const failure = updateFailureType(err);
      if (isNotFound(err)) return this.depositToClosed(wallet, executionId, deposit, sender);
      if (failure?.type !== ExecutionFailure.duplicate) {
        throw mapTemporalError(err, `execution ${executionId}`, {
          [ExecutionFailure.depositRefused]: (message) => conflict(message, 'DEPOSIT_REFUSED'),
        });
      }
      record = failure.detail as ExecutionRecord;
    }
    return this.written(workflowId, record);
  }

  /**
   * A report's asset is native or a token of DEPOSIT_TOKENS on its chain (the target's, else the
   * one it names), else 400: a token nobody allowed is worth nothing, and never becomes a deposit
   * or a refund owed. The proof refuses it too (token-not-allowed), for the worker's signals.
   */
  private checkAsset(reported: Deposit, target: DepositTarget | undefined): void {
    const asset = target ? reportedAsset(target, reported) : reported.asset;
    if (asset === undefined || asset === 'native') return;
    const chain = target?.chain ?? reported.chain;
    if (chain === undefined || !assetAllowed(this.config.chain?.tokens ?? [], chain, asset))
      throw badRequest(`asset ${asset} is not a token this service accepts${chain === undefined ? '' : ` on ${chain}`} (DEPOSIT_TOKENS)`);
  }

  /**
   * The deposit the chain shows for a report to an on-chain target; 409 when it shows none (yet) or
   * shows a transfer a deposit address paid (the service's own), 503 when the chain's node is down.
   */
  private async proven(target: DepositTarget, reported: Deposit): Promise<{ deposit: Deposit; sender?: string }> {
    if (!this.deposits) throw unavailable('on-chain deposits are not configured on this API (CHAIN_RPC_URL)', READ_MODEL_RETRY_AFTER_S);
    let proof: DepositProof;
    try {
      proof = await this.deposits.prove(target, reported);
    } catch (err) {
      throw unavailable("the chain's node is unavailable; try again later", READ_MODEL_RETRY_AFTER_S, err);
    }
    if (!proof.ok && proof.reason === 'token-not-allowed') throw badRequest(`the deposit's ${proof.message}`);
    // Money the service moved itself is neither a deposit nor owed: nothing is written.
    if (!proof.ok && proof.reason === 'service-transfer')
      throw conflict(`this transfer is no deposit: ${proof.message}`, 'DEPOSIT_FROM_SERVICE');
    if (!proof.ok) throw conflict(`the chain does not back this deposit: ${proof.message}`, 'DEPOSIT_NOT_ON_CHAIN');
    return proof.sender === undefined ? { deposit: proof.deposit } : { deposit: proof.deposit, sender: proof.sender };
  }

  /**
   * A deposit reported to an execution whose workflow has closed, judged on its final record by the
   * same rule the workflow applies: the deposit it holds again is 200; anything else is owed back.
   */
  private async depositToClosed(wallet: string, executionId: string, deposit: Deposit, sender?: string): Promise<ExecutionRecord> {
    const record = await this.get(wallet, executionId);
    const { outcome } = applyDeposit(record, deposit, new Date(this.clock()).toISOString());
    if (outcome === 'duplicate') return record;
    return this.refuseDeposit(record, deposit, outcome, sender);
  }

  /**
   * A deposit the execution does not take: recorded once in the refunds ledger, answered 409 with
   * the words the workflow uses. An execution that has closed refuses even a deposit it would have
   * taken while open (`closed`). `sender` is the transfer's payer, when the chain showed it; whether
   * it has code is asked of the chain too (best effort: a node that does not answer leaves it unknown).
   */
  private async refuseDeposit(record: ExecutionRecord, deposit: Deposit, outcome: DepositOutcome, sender?: string): Promise<never> {
    const reason = outcome === 'applied' || outcome === 'duplicate' ? 'closed' : outcome.slice('refused-'.length);
    const payerKind = sender === undefined ? undefined : await this.deposits?.payerKind(sender).catch(() => undefined);
    await this.readModel(() =>
      this.refunds.recordDue({
        workflowId: executionWorkflowId(record.wallet, record.executionId),
        wallet: record.wallet,
        executionId: record.executionId,
        ...deposit,
        ...(sender === undefined ? {} : { sender }),
        ...(payerKind === undefined ? {} : { payerKind }),
        asset: deposit.asset ?? record.depositTarget?.asset ?? 'native',
        reason,
        reportedBy: 'api',
      }),
    );
    const message = reason === 'closed' ? undefined : REFUSED_DEPOSIT_MESSAGES[outcome];
    throw conflict(message ?? 'execution is closed; the deposit was recorded for refund', 'DEPOSIT_REFUSED');
  }

  private async factsOf(wallet: string, executionId: string): Promise<ExecutionFacts> {
    const workflowId = executionWorkflowId(wallet, executionId);
    const cached = this.facts.get(workflowId);
    if (cached) return cached;
    const record = await this.get(wallet, executionId);
    const facts = { signerPublicKey: record.signerPublicKey, intentHash: record.intentHash };
    this.facts.set(workflowId, facts);
    return facts;
  }
}

/** A prepare under an executionId taken by another prepare (another intent, signer key, ttl or deposit). */
const alreadyExists = (executionId: string) =>
  conflict(`execution ${executionId} already exists with other content (intent, signer key, ttl or deposit)`, 'ALREADY_EXISTS');

/** How the API answers a submit the execution refuses, by the workflow's failure type. */
const SUBMIT_REFUSALS: Record<string, () => ServiceError> = {
  [ExecutionFailure.expired]: () => conflict('execution is EXPIRED', 'EXPIRED'),
  [ExecutionFailure.cancelled]: () => conflict('execution is CANCELLED', 'CANCELLED'),
  [ExecutionFailure.signatureConflict]: () => conflict('execution already holds a different signature', 'SIGNATURE_CONFLICT'),
};

/** The workflow's failure type for each refusal of checkSubmit. */
const SUBMIT_CHECK_FAILURES = {
  expired: ExecutionFailure.expired,
  cancelled: ExecutionFailure.cancelled,
  'other-signature': ExecutionFailure.signatureConflict,
} as const;

/** Temporal has no such workflow (never started, or removed after the namespace's retention). */
function isNotFound(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === 5);
}
