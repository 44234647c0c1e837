import { toBase58 } from '../../domain/encoding.js';
import { IntentServiceError } from './errors.js';
import { send, sleep, type CallOptions, type Pace } from './http.js';
import type { paths } from './openapi.js';
import { signCancel, signRefundAddress, signSubmit, type KeyEncoding, type Signer, type SubmitSigning } from './signing.js';
import { readEvents } from './sse.js';
import {
  FINAL_STATUSES,
  OPEN_REFUND_STATES,
  type DepositEntry,
  type DepositRequest,
  type ExecutionList,
  type ExecutionRecord,
  type ExecutionRefund,
  type ExecutionStatus,
  type LookupItem,
  type OwnerRefundAddress,
  type PrepareRequest,
  type SubmitAnswer,
} from './types.js';

/** The routes the client calls: each must be a path of the service's OpenAPI document. */
const ROUTES = {
  executions: '/api/v1/executions/{wallet}',
  submit: '/api/v1/executions/{wallet}/submit',
  execution: '/api/v1/executions/{wallet}/{executionId}',
  deposit: '/api/v1/executions/{wallet}/{executionId}/deposit',
  cancel: '/api/v1/executions/{wallet}/{executionId}/cancel',
  events: '/api/v1/executions/{wallet}/{executionId}/events',
  deposits: '/api/v1/deposits/{chain}/{txHash}',
  lookup: '/api/v1/executions/lookup',
  refundAddress: '/api/v1/executions/{wallet}/{executionId}/refund-address',
} as const satisfies Record<string, keyof paths>;

/** A route with its `{name}` segments filled in, each URL-encoded. */
function route(template: keyof paths, params: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]));
}

export interface IntentClientOptions {
  /** The API's origin, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** A bearer token for prepare and deposit (scopes `executions:prepare`, `executions:deposit`). */
  token?: string;
  /** The deadline of a call, retries included, when the call names none: 30 000 ms by default. */
  deadlineMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** What submit signs: SubmitSigning, with the wallet optional (by default the signer's key in base58). */
export type SubmitInput = Omit<SubmitSigning, 'wallet'> & { wallet?: string };

export interface CancelInput {
  domain: string;
  timestamp?: number;
  encoding?: KeyEncoding;
  wallet?: string;
}

export interface ListQuery {
  /** One status or several. */
  status?: ExecutionStatus | readonly ExecutionStatus[];
  /** A page's `cursor` (the service's nextPageToken): the page after it. */
  cursor?: string;
  /** 1-100, 20 by default. */
  pageSize?: number;
}

/** What `list` answers: a page when awaited, every page from it on when iterated with `for await`. */
export type PageList = PromiseLike<ExecutionPage> & AsyncIterable<ExecutionPage>;

/** One page of a wallet's executions, newest first; `cursor` is absent on the last page. */
export interface ExecutionPage {
  executions: ExecutionRecord[];
  cursor?: string;
}

/**
 * One event of `watch`: a status (the record as it stood) or a refund (one of the execution's
 * refunds ledger rows, new or changed: its state, holdReason while held, refundTxHash once
 * refunded). `id` is set on the last event of each write the service made: the stream's position,
 * to resume from with `lastEventId`.
 */
export type WatchEvent =
  | { event: 'status'; status: ExecutionStatus; record: ExecutionRecord; id?: string }
  | { event: 'refund'; refund: ExecutionRefund; id?: string };

export interface WatchOptions extends CallOptions {
  /** The id of the last event already seen: the stream starts after it. */
  lastEventId?: string;
  /** Wait before reconnecting after a stream that ended without a final status, in ms: 1000 by default. */
  reconnectDelayMs?: number;
}

/**
 * A typed client of the intent service's execution routes. Calls that are safe to send again
 * (submit, cancel, get, list, lookup, watch) are retried after a 503 or 429 with Retry-After and
 * after a network failure, within the call's deadline; prepare and deposit are sent once. A 409 is
 * never retried. The client paces itself by the service's limits: after a 429, or an answer whose
 * `RateLimit` field says nothing is left, no call leaves before the window resets.
 */
export class IntentClient {
  private readonly baseUrl: string;
  private readonly token?: string;
  private readonly deadlineMs: number;
  private readonly fetchFn: typeof fetch;
  /** Set by the service's RateLimit and Retry-After answers: every call waits for it. */
  private readonly pace: Pace = { notBefore: 0 };

  constructor(options: IntentClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.deadlineMs = options.deadlineMs ?? 30_000;
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Prepares an execution for `wallet` (needs a token with `executions:prepare`); answers its record. */
  async prepare(wallet: string, body: PrepareRequest, options: CallOptions = {}): Promise<ExecutionRecord> {
    return this.record('POST', route(ROUTES.executions, { wallet }), body, false, options, true);
  }

  /** Reports a deposit (needs `executions:deposit`); answers the record. */
  async deposit(wallet: string, executionId: string, body: DepositRequest, options: CallOptions = {}): Promise<ExecutionRecord> {
    return this.record('POST', route(ROUTES.deposit, { wallet, executionId }), body, false, options, true);
  }

  /** Builds the signing message, has `signer` sign it and submits; answers the status it moved to. */
  async submit(signer: Signer, input: SubmitInput, options: CallOptions = {}): Promise<SubmitAnswer> {
    const wallet = input.wallet ?? walletOf(signer);
    const body = await signSubmit(signer, { ...input, wallet });
    const response = await this.call('POST', route(ROUTES.submit, { wallet }), body, true, options);
    return ((await response.json()) as { result: SubmitAnswer }).result;
  }

  /** Signs the cancel message with `signer` and cancels; answers the record. */
  async cancel(signer: Signer, executionId: string, input: CancelInput, options: CallOptions = {}): Promise<ExecutionRecord> {
    const wallet = input.wallet ?? walletOf(signer);
    const body = await signCancel(signer, { ...input, wallet, executionId });
    return this.record('POST', route(ROUTES.cancel, { wallet, executionId }), body, true, options);
  }

  /**
   * Signs with `signer` where refunds of the execution's own deposit, and of that deposit's payer's
   * other transfers, go, and sends it; answers the address in force. A retry of the same command is
   * answered as it was; an older one is 409 `REFUND_ADDRESS_STALE`.
   */
  async setRefundAddress(
    signer: Signer,
    executionId: string,
    input: CancelInput & { refundAddress: string },
    options: CallOptions = {},
  ): Promise<OwnerRefundAddress> {
    const wallet = input.wallet ?? walletOf(signer);
    const body = await signRefundAddress(signer, { ...input, wallet, executionId });
    const response = await this.call('POST', route(ROUTES.refundAddress, { wallet, executionId }), body, true, options);
    return ((await response.json()) as { result: OwnerRefundAddress }).result;
  }

  /** The execution's record. */
  async get(wallet: string, executionId: string, options: CallOptions = {}): Promise<ExecutionRecord> {
    return this.record('GET', route(ROUTES.execution, { wallet, executionId }), undefined, true, options);
  }

  /**
   * What became of the transfers of transaction `txHash` on `chain` (`evm:<chainId>`): one entry per
   * transfer the service knows of, `taken` by an execution or `owed` back with its refund's state.
   * A transaction the service knows nothing of (yet) is an IntentServiceError with status 404.
   */
  async depositStatus(chain: string, txHash: string, options: CallOptions = {}): Promise<DepositEntry[]> {
    const response = await this.call('GET', route(ROUTES.deposits, { chain, txHash }), undefined, true, options);
    return ((await response.json()) as { result: DepositEntry[] }).result;
  }

  /**
   * Up to 128 executions at once, answered in the order asked: each `{ record }` or its own
   * `{ error, code }` (`NOT_FOUND`, `INVALID`). Each item costs one read of the client's rate limit.
   */
  async lookup(executions: ReadonlyArray<{ wallet: string; executionId: string }>, options: CallOptions = {}): Promise<LookupItem[]> {
    const body = { executions: executions.map(({ wallet, executionId }) => ({ wallet, executionId })) };
    const response = await this.call('POST', ROUTES.lookup, body, true, options);
    return ((await response.json()) as { result: LookupItem[] }).result;
  }

  /**
   * The wallet's executions, newest first: awaited, the page at `query.cursor` (the first by
   * default); iterated (`for await`), that page and every one after it, each with its own deadline.
   */
  list(wallet: string, query: ListQuery = {}, options: CallOptions = {}): PageList {
    let first: Promise<ExecutionPage> | undefined;
    const firstPage = () => (first ??= this.page(wallet, query, options));
    const next = (cursor: string) => this.page(wallet, { ...query, cursor }, options);
    return {
      then: (onPage, onError) => firstPage().then(onPage, onError),
      async *[Symbol.asyncIterator]() {
        let page = await firstPage();
        yield page;
        while (page.cursor !== undefined) {
          page = await next(page.cursor);
          yield page;
        }
      },
    };
  }

  private async page(wallet: string, query: ListQuery, options: CallOptions): Promise<ExecutionPage> {
    const params = new URLSearchParams();
    if (query.status !== undefined) params.set('status', typeof query.status === 'string' ? query.status : query.status.join(','));
    if (query.pageSize !== undefined) params.set('pageSize', String(query.pageSize));
    if (query.cursor !== undefined) params.set('pageToken', query.cursor);
    const search = params.toString() === '' ? '' : `?${params}`;
    const response = await this.call('GET', `${route(ROUTES.executions, { wallet })}${search}`, undefined, true, options);
    const page = (await response.json()) as ExecutionList;
    return { executions: page.result, ...(page.nextPageToken === undefined ? {} : { cursor: page.nextPageToken }) };
  }

  /**
   * The execution's events (Server-Sent Events): the record and its refunds now, then every
   * change of either, ending after a final status (SIGNING, EXPIRED, CANCELLED) once none of its
   * refunds is due, held or paying. A stream that ends or breaks before is reopened with
   * Last-Event-ID; `deadlineMs` bounds each stretch without an open stream.
   */
  async *watch(wallet: string, executionId: string, options: WatchOptions = {}): AsyncGenerator<WatchEvent> {
    let lastEventId = options.lastEventId;
    /** Whether the newest record is final, and the state of each refund seen: the stream's end. */
    let final = false;
    const refunds = new Map<string, ExecutionRefund['state']>();
    const url = route(ROUTES.events, { wallet, executionId });
    for (;;) {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      const deadline = Date.now() + (options.deadlineMs ?? this.deadlineMs);
      const response = await send(
        this.fetchFn,
        this.baseUrl + url,
        { headers },
        { retry: true, deadline, signal: options.signal, pace: this.pace },
      );
      if (response.status === 204 || !response.body) return; // the final record and settled refunds were the last seen
      try {
        for await (const message of readEvents(response.body)) {
          const id = message.id === undefined ? {} : { id: message.id };
          if (message.event === 'status') {
            const record = JSON.parse(message.data) as ExecutionRecord;
            if (message.id !== undefined) final = FINAL_STATUSES.includes(record.status);
            yield { event: 'status', status: record.status, record, ...id };
          } else if (message.event === 'refund') {
            const refund = JSON.parse(message.data) as ExecutionRefund;
            refunds.set(refund.id, refund.state);
            yield { event: 'refund', refund, ...id };
          } else continue;
          if (message.id === undefined) continue;
          lastEventId = message.id;
          if (final && [...refunds.values()].every((state) => !OPEN_REFUND_STATES.includes(state))) return;
        }
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (!(err instanceof TypeError || (err as Error).name === 'AbortError')) throw err;
        // the connection broke: reopen it from the last event
      }
      await sleep(options.reconnectDelayMs ?? 1000, options.signal);
    }
  }

  private async record(
    method: string,
    path: string,
    body: unknown,
    retry: boolean,
    options: CallOptions,
    auth = false,
  ): Promise<ExecutionRecord> {
    const response = await this.call(method, path, body, retry, options, auth);
    return ((await response.json()) as { result: ExecutionRecord }).result;
  }

  private call(method: string, path: string, body: unknown, retry: boolean, options: CallOptions, auth = false): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (auth) {
      if (this.token === undefined) throw new IntentServiceError(401, 'this call needs the client to have a token');
      headers.authorization = `Bearer ${this.token}`;
    }
    const init: RequestInit = { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) };
    const deadline = Date.now() + (options.deadlineMs ?? this.deadlineMs);
    return send(this.fetchFn, this.baseUrl + path, init, { retry, deadline, signal: options.signal, pace: this.pace });
  }
}

/** The wallet a signer stands for by default: its public key in base58. */
export function walletOf(signer: Pick<Signer, 'publicKey'>): string {
  if (typeof signer.publicKey !== 'string') return toBase58(signer.publicKey);
  return signer.publicKey.startsWith('0x')
    ? toBase58(Uint8Array.from(signer.publicKey.slice(2).match(/../g)!, (h) => parseInt(h, 16)))
    : signer.publicKey;
}
