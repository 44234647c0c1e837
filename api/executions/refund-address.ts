import { executionWorkflowId } from '../../contracts/temporal';
import type { OwnerRefundAddresses } from '../../db/owner-refund-address';
import { toHex } from '../../domain/encoding';
import { parseEoa } from '../../domain/eoa';
import { ServiceError, badRequest, conflict, unavailable } from '../../domain/errors';
import { unreceivableAddress } from '../../domain/refund-policy';
import { buildRefundAddressMessage } from '../../domain/signing-message';
import type { DepositDeps } from '../deps';
import { READ_MODEL_RETRY_AFTER_S } from '../http/read-model';
import type { ExecutionRecords } from './records';
import type { RefundAddressRequest } from './request-schemas';
import { noLimit, type WalletBudget } from './run-command';
import type { SignedRequests } from './signed-requests';

/** What the refund address route answers: the address in force and what it covers. */
export interface OwnerRefundAnswer {
  /** EIP-55. */
  refundAddress: string;
  /** The execution's own deposit's transaction, whose refund goes there. */
  txHash: string;
  /** Its payer (lowercase): that payer's other transfers to the execution go there too. */
  payer?: string;
  /** The command's time (its envelope's timestamp). */
  setAt: string;
}

/**
 * The owner's say over the refund (decision 0098): the execution's signer key signs where refunds of
 * its own deposit, and of that deposit's payer's other transfers, go. Checked like cancel (the
 * envelope, the signer key, the signature); refused while a refund of the execution is `paying`,
 * and for a command not newer than the one in force. Nothing of the workflow changes: the
 * refunder reads the address with the deposit address's other facts.
 */
export class SetRefundAddresses {
  constructor(
    private readonly records: ExecutionRecords,
    private readonly signed: SignedRequests,
    private readonly deposits?: DepositDeps,
    private readonly owners?: OwnerRefundAddresses,
  ) {}

  async set(wallet: string, executionId: string, body: RefundAddressRequest, budget: WalletBudget = noLimit): Promise<OwnerRefundAnswer> {
    const { signature } = await this.signed.verify(wallet, executionId, body, () =>
      buildRefundAddressMessage({
        domain: body.connectEnvelope.domain,
        executionId,
        address: wallet,
        refundAddress: body.refundAddress,
        timestamp: body.connectEnvelope.timestamp,
      }),
    );
    budget.verified();
    const parsed = parseEoa(body.refundAddress);
    if (!parsed.ok) throw badRequest(`refundAddress ${parsed.reason}`);
    const unreceivable = unreceivableAddress(parsed.address);
    if (unreceivable !== undefined) throw badRequest(`refundAddress ${unreceivable}: nothing sent there can come back`);
    const { deposits, owners } = this;
    if (!deposits || !owners) throw conflict('this service takes no on-chain deposits: it pays no refund by itself', 'NO_DEPOSIT_TARGET');

    const record = await this.records.get(wallet, executionId);
    const target = record.depositTarget;
    if (!target) throw conflict(`execution ${executionId} has no deposit address: it pays no refund by itself`, 'NO_DEPOSIT_TARGET');
    if (!record.deposit)
      throw conflict(`execution ${executionId} holds no deposit yet: there is no transfer of its owner to send back`, 'NO_DEPOSIT');
    if (await this.records.readModel(() => deposits.store.isDepositAddress(parsed.address)))
      throw badRequest('refundAddress is a deposit address of this service');
    await budget.spend();

    // Who paid the deposit, as the chain shows it: that payer's transfers are the owner's to redirect.
    let payer: string | undefined;
    try {
      const proof = await deposits.prove(target, record.deposit);
      payer = proof.ok ? proof.sender?.toLowerCase() : undefined;
    } catch (err) {
      throw unavailable("the chain's node is unavailable; try again later", READ_MODEL_RETRY_AFTER_S, err);
    }
    const command = {
      address: parsed.address,
      txHash: record.deposit.txHash.toLowerCase(),
      ...(payer === undefined ? {} : { payer }),
      at: body.connectEnvelope.timestamp,
      signature: toHex(signature),
    };
    const done = await this.records.readModel(() =>
      owners.set(target.chain, target.address, executionWorkflowId(wallet, executionId), command),
    );
    switch (done.outcome) {
      case 'applied':
      case 'same':
        break;
      case 'stale':
        await budget.giveBack();
        throw conflict(
          `a refund address set at ${done.current.at} (Unix seconds) is in force; this command (${command.at}) is not newer`,
          'REFUND_ADDRESS_STALE',
        );
      case 'paying':
        await budget.giveBack();
        throw conflict('a refund of this execution is being paid: its destination can no longer change', 'REFUND_PAYING');
      case 'missing':
        throw new ServiceError(500, 'INTERNAL', 'the deposit address is not in the read model', { expose: false });
    }
    const inForce = done.outcome === 'same' ? ((await owners.of(target.chain, target.address)) ?? command) : command;
    return answerOf(inForce);
  }
}

export function answerOf(owner: { address: string; txHash: string; payer?: string; at: number }): OwnerRefundAnswer {
  const parsed = parseEoa(owner.address);
  return {
    refundAddress: parsed.ok ? parsed.address : owner.address,
    txHash: owner.txHash,
    ...(owner.payer === undefined ? {} : { payer: owner.payer }),
    setAt: new Date(owner.at * 1000).toISOString(),
  };
}
