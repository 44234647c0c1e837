import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import type { Hash } from 'viem';
import { chainWatcherStateQuery, chainWatcherWorkflowId, executionWorkflowId, type ChainWatcherView } from '../../contracts/temporal';
import type { ExecutionAnswer } from '../../api/executions/service';
import { eventually } from './eventually';
import { request } from './http-request';
import { ProcessStack } from './stack/process-stack';
import type { TestChain } from './test-chain';
import { newWallet, sampleIntent, type TestWallet } from './wallets';

/** An execution prepared with an on-chain deposit target. */
export interface PreparedDeposit {
  wallet: TestWallet;
  executionId: string;
  /** The deposit address prepare answered. */
  address: string;
  /** The body prepare was sent. */
  body: Record<string, unknown>;
}

export interface PrepareDepositOptions {
  /** `native` (the default) or `erc20:<token address>`. */
  asset?: string;
  minAmount?: string;
  /** More fields of prepare's body (a webhook, an expiry). */
  extra?: Record<string, unknown>;
  /** The execution id's prefix, so a test's executions are told apart in Temporal's UI. */
  idPrefix?: string;
  /** The wallet and execution id to prepare under (default: a new wallet, the prefix and a UUID). */
  as?: { wallet: TestWallet; executionId: string };
}

/**
 * The calls every chain-deposit test makes against a process stack that follows a test chain:
 * prepare with a deposit target, read the record, ask the chain watcher where it is, count an
 * execution's deposit signals. `stack` and `chain` are read at each call: tests make them in
 * `before`.
 */
export function depositHelpers(stack: () => ProcessStack, chain: () => TestChain, chainId: string) {
  const api = (method: string, p: string, json?: unknown) => request(stack().apiUrl, method, p, { json, token: stack().token });

  const watcher = () =>
    stack().client.workflow.getHandle(chainWatcherWorkflowId(chainId)).query(chainWatcherStateQuery) as Promise<ChainWatcherView>;

  const record = async (e: PreparedDeposit): Promise<ExecutionAnswer> => {
    const res = await api('GET', `/api/v1/executions/${e.wallet.id}/${e.executionId}`);
    assert.equal(res.status, 200, res.text);
    return res.body.result;
  };

  /** The record, or undefined while the API cannot read it (no worker answers the query yet). */
  const recordIfReadable = (e: PreparedDeposit) => record(e).catch(() => undefined);

  /** How many `depositCompleted` signals the execution's history holds. */
  const depositSignals = async (e: PreparedDeposit): Promise<number> => {
    const history = await stack().client.workflow.getHandle(executionWorkflowId(e.wallet.id, e.executionId)).fetchHistory();
    return (history.events ?? []).filter(
      (ev) =>
        ev.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
        ev.workflowExecutionSignaledEventAttributes?.signalName === 'depositCompleted',
    ).length;
  };

  /** `read` of each execution, twenty at a time, in order. */
  const eachOf = async <T>(executions: readonly PreparedDeposit[], read: (e: PreparedDeposit) => Promise<T>): Promise<T[]> => {
    const out: T[] = [];
    for (let i = 0; i < executions.length; i += 20) out.push(...(await Promise.all(executions.slice(i, i + 20).map(read))));
    return out;
  };

  return {
    api,
    watcher,
    record,
    recordIfReadable,
    depositSignals,

    /**
     * Waits until the execution's record is OPERATION_PENDING and answers it, asking every `stepMs`.
     * `read`: `record` (a failed read fails at once), or `recordIfReadable` while a worker restarts.
     */
    operationPending: (
      e: PreparedDeposit,
      timeoutMs: number,
      read: (e: PreparedDeposit) => Promise<ExecutionAnswer | undefined> = record,
      stepMs?: number,
    ) =>
      eventually(
        async () => {
          const r = await read(e);
          return r?.status === 'OPERATION_PENDING' && r;
        },
        timeoutMs,
        stepMs,
      ),

    /**
     * Sends each execution its transfer (`send`, given the execution and its block's place), `perBlock`
     * to a block, mining each block once its transfers are in the pool; answers the transactions in
     * the executions' order. Sent one by one: the node numbers them from the pool, and the pool's
     * order is the sending order.
     */
    async sendInBlocks(
      executions: readonly PreparedDeposit[],
      perBlock: number,
      send: (e: PreparedDeposit, block: number) => Promise<Hash>,
    ): Promise<Hash[]> {
      const txs: Hash[] = [];
      for (let block = 0; block * perBlock < executions.length; block++) {
        for (const e of executions.slice(block * perBlock, (block + 1) * perBlock)) txs.push(await send(e, block));
        await chain().mine(1);
      }
      return txs;
    },

    /** Each execution's record, in order. */
    recordsOf: (executions: readonly PreparedDeposit[]) => eachOf(executions, record),

    /** Each execution's count of `depositCompleted` signals, in order. */
    depositSignalsOf: (executions: readonly PreparedDeposit[]) => eachOf(executions, depositSignals),

    /** Prepares an execution whose deposit is on `chainId`; asserts the target prepare answers. */
    async prepare(options: PrepareDepositOptions = {}): Promise<PreparedDeposit> {
      const { asset = 'native', minAmount = '1000', extra = {}, idPrefix = 'chain' } = options;
      const wallet = options.as?.wallet ?? newWallet();
      const executionId = options.as?.executionId ?? `${idPrefix}-${randomUUID()}`;
      const body = { executionId, intent: sampleIntent(), deposit: { chain: chainId, asset, minAmount }, ...extra };
      const res = await api('POST', `/api/v1/executions/${wallet.id}`, body);
      assert.equal(res.status, 201, res.text);
      const target = res.body.result.depositTarget;
      assert.equal(target.chain, chainId);
      assert.equal(target.asset, asset.toLowerCase());
      assert.equal(target.minAmount, minAmount);
      return { wallet, executionId, address: target.address, body };
    },

    /** Mines up to block `n` if the chain is short of it, then waits until the watcher has read it. */
    async watcherPast(n: number): Promise<ChainWatcherView> {
      if ((await chain().head()) < n) await chain().mine(n - (await chain().head()));
      return eventually(async () => {
        const view = await watcher();
        return view.cursor >= n && view;
      }, 60_000);
    },
  };
}

/**
 * A process stack whose worker follows `chain` (its watcher polling every 100 ms, `confirmations`
 * deep on `chainId`), with `env` added or overriding; answers once it is up and its chain watcher
 * answers queries. `makeStack` makes the stack from its options (the tests' own kind, for one).
 */
export async function startFollowingStack<S extends ProcessStack = ProcessStack>(
  chain: TestChain,
  chainId: string,
  confirmations: number,
  env: Record<string, string> = {},
  makeStack: (options: { env: Record<string, string> }) => S = (options) => new ProcessStack(options) as S,
): Promise<S> {
  const stack = makeStack({
    env: { CHAIN_RPC_URL: chain.url, DEPOSIT_CONFIRMATIONS: `${chainId}=${confirmations}`, CHAIN_POLL_INTERVAL_MS: '100', ...env },
  });
  await stack.start();
  const watcher = () => stack.client.workflow.getHandle(chainWatcherWorkflowId(chainId)).query(chainWatcherStateQuery);
  await eventually(() => watcher().catch(() => undefined), 60_000, 200);
  return stack;
}
