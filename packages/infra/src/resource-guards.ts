import { Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { denyStatement, deploymentPrincipals, principalOtherThan } from './deployment-guards.ts';

/**
 * Who may manage and who may consume the stage's queues, bus and tables, as explicit Denies in
 * their resource policies (packages/infra/src/deployment-guards.ts says why an identity policy's Allow is not
 * enough). Who may send is packages/infra/src/sender-policy.ts.
 */

/**
 * Changing a queue: `SetQueueAttributes` writes its policy (stripping every Deny of it) and its
 * redrive settings, `AddPermission`/`RemovePermission` edit the policy too, `PurgeQueue` and
 * `DeleteQueue` lose every message in it, tags feed ABAC identity policies.
 */
export const QUEUE_MANAGEMENT = [
  'sqs:SetQueueAttributes',
  'sqs:AddPermission',
  'sqs:RemovePermission',
  'sqs:PurgeQueue',
  'sqs:DeleteQueue',
  'sqs:TagQueue',
  'sqs:UntagQueue',
] as const;

/** Taking messages off a queue: a receiver that deletes them, or hides them for up to 12 hours, loses or delays them. */
export const QUEUE_CONSUMPTION = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'] as const;

/** Only the deployment changes `queue`; only `receivers` (and nobody, when none) take messages off it. */
export function guardQueue(queue: sqs.IQueue, receivers: readonly string[]): void {
  const deployment = deploymentPrincipals(Stack.of(queue));
  queue.addToResourcePolicy(
    denyStatement(
      'OnlyTheDeploymentManagesIt',
      QUEUE_MANAGEMENT,
      principalOtherThan(() => deployment),
      [queue.queueArn],
    ),
  );
  queue.addToResourcePolicy(
    denyStatement(
      'OnlyItsConsumersReceive',
      QUEUE_CONSUMPTION,
      receivers.length > 0 ? principalOtherThan(() => receivers) : {},
      [queue.queueArn],
    ),
  );
}

/**
 * What changes the rules of a bus. A disabled or deleted rule, or a target removed, drops every
 * event it carried with no trace but the archive; a rule added sends the orders elsewhere.
 * `events:PutPermission`/`RemovePermission` (which rewrite the bus policy) and `DeleteEventBus`
 * cannot be named here: the first two have no resource-level permissions and a bus policy names
 * only what EventBridge documents for it, so they rest on the account's SCPs (docs/security.md).
 */
export const BUS_RULE_MANAGEMENT = [
  'events:PutRule',
  'events:DeleteRule',
  'events:DisableRule',
  'events:EnableRule',
  'events:PutTargets',
  'events:RemoveTargets',
] as const;

/**
 * Only the deployment changes the rules on `bus`. AWS services are left to their own: EventBridge
 * itself keeps the archive's managed rule on the bus.
 */
export function guardBus(bus: events.EventBus): void {
  const stack = Stack.of(bus);
  const deployment = deploymentPrincipals(stack);
  bus.addToResourcePolicy(
    denyStatement(
      'OnlyTheDeploymentChangesItsRules',
      BUS_RULE_MANAGEMENT,
      { ...principalOtherThan(() => deployment), BoolIfExists: { 'aws:PrincipalIsAWSService': 'false' } },
      [stack.formatArn({ service: 'events', resource: 'rule', resourceName: `${bus.eventBusName}/*` })],
    ),
  );
}

/**
 * Item writes, however made (TransactWriteItems is authorised per item action, PartiQL per
 * statement kind): a broad writer could credit points, move an order or delete the dedup record
 * that keeps a redelivery from applying twice.
 */
export const TABLE_ITEM_WRITES = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:PartiQLInsert',
  'dynamodb:PartiQLUpdate',
  'dynamodb:PartiQLDelete',
] as const;

/**
 * Changing a table: deleting it, its settings (an `UpdateTable` can switch deletion protection off,
 * `UpdateTimeToLive` can expire records early, `UpdateContinuousBackups` stops PITR), its resource
 * policy, tags, and a Kinesis stream of every change.
 */
export const TABLE_MANAGEMENT = [
  'dynamodb:DeleteTable',
  'dynamodb:UpdateTable',
  'dynamodb:UpdateTimeToLive',
  'dynamodb:UpdateContinuousBackups',
  'dynamodb:PutResourcePolicy',
  'dynamodb:DeleteResourcePolicy',
  'dynamodb:TagResource',
  'dynamodb:UntagResource',
  'dynamodb:EnableKinesisStreamingDestination',
  'dynamodb:UpdateKinesisStreamingDestination',
  'dynamodb:DisableKinesisStreamingDestination',
] as const;

/**
 * Only `writers` (the roles whose code writes the table, and the operators) write items; only the
 * deployment changes the table. DynamoDB refuses a policy that would deny its own caller
 * `PutResourcePolicy` (unless told to), so the deployment role must stay exempt, as it is. The
 * resource is `*`, the table itself: a policy cannot name the table it is created with.
 */
export function guardTable(table: dynamodb.Table, writers: readonly string[]): void {
  const deployment = deploymentPrincipals(Stack.of(table));
  table.addToResourcePolicy(
    denyStatement(
      'OnlyItsWritersChangeItems',
      TABLE_ITEM_WRITES,
      writers.length > 0 ? principalOtherThan(() => writers) : {},
    ),
  );
  table.addToResourcePolicy(
    denyStatement(
      'OnlyTheDeploymentManagesIt',
      TABLE_MANAGEMENT,
      principalOtherThan(() => deployment),
    ),
  );
}
