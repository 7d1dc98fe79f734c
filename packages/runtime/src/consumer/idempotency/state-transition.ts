import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ConsumptionError } from '../failures/errors.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import type { BeginResult, ConsumptionStrategy } from './strategy.ts';

/** What an update-type consumer declares: a conditional update and how to read its failure. */
export interface TransitionRequest {
  readonly update: Omit<UpdateCommandInput, 'ReturnValuesOnConditionCheckFailure'>;
  /**
   * Called with the item as it was when the precondition failed (undefined if absent).
   * Returns a settlement (e.g. a duplicate: the state already moved on) or throws a
   * classified error (not yet applicable → retried; illegal → dead-lettered), which the
   * strategy returns as the record's failed settlement.
   */
  readonly explainRejection: (current: Record<string, unknown> | undefined) => Settlement;
}

/**
 * State-transition mode: the update's precondition (`status = WAIT_PAY`) is the
 * idempotency check, so no dedup record is needed: a replay finds the state already
 * moved on and changes nothing. One conditional write per message; a failed condition
 * returns the current item at no read cost (ALL_OLD).
 */
export function stateTransitionStrategy(options: {
  client: DynamoDBDocumentClient;
}): ConsumptionStrategy<TransitionRequest> {
  return {
    recordTtlSeconds: Number.POSITIVE_INFINITY,
    async begin(): Promise<BeginResult> {
      return { proceed: true };
    },
    async commit<P>(_msg: ConsumerMessage<P>, request: TransitionRequest): Promise<Settlement> {
      try {
        await options.client.send(
          new UpdateCommand({ ...request.update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
        );
        return { outcome: 'processed' };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        return explainedRejection(request, error.Item ? unmarshall(error.Item) : undefined);
      }
    },
    async abort(): Promise<void> {},
  };
}

/** The business's reading of the item as it was; a classified error it throws is the record's failure. */
function explainedRejection(request: TransitionRequest, current: Record<string, unknown> | undefined): Settlement {
  try {
    return request.explainRejection(current);
  } catch (error) {
    if (error instanceof ConsumptionError) return { outcome: 'failed', error };
    throw error;
  }
}
