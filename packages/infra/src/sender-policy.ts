import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';

/**
 * Who may put a message where a consumer will act on it. Inside one account an identity policy
 * with `sqs:SendMessage` or `events:PutEvents` is enough to reach a queue or a bus that has no
 * resource policy saying otherwise, so "only the bridge" must be an explicit Deny for everyone
 * else: IAM principals other than the named roles, and AWS services other than the group's own
 * rule (EventBridge delivers with the rule's ARN as `aws:SourceArn`).
 *
 * The principal is the literal `*` (not `{"AWS": "*"}`), so the Deny also covers service principals.
 * `aws:PrincipalArn` is the role's ARN for its sessions, so a role ARN names every session of it;
 * `ArnNotLike` lets a listed ARN carry wildcards (an SSO permission set's role has a generated suffix).
 */
export interface Senders {
  /** Roles allowed to send: the stage's bridge task role and the stage's `senderRoleArns`. */
  readonly roleArns: readonly string[];
}

/** Denies `sqs:SendMessage` on `queue` to everyone but `senders` and, when given, the EventBridge rule `ruleArn`. */
export function restrictQueueSenders(queue: sqs.IQueue, senders: Senders, ruleArn?: string): void {
  queue.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'OnlyTheBridgeSends',
      effect: iam.Effect.DENY,
      principals: [new iam.StarPrincipal()],
      actions: ['sqs:SendMessage'],
      resources: [queue.queueArn],
      conditions: principalOtherThan(senders),
    }),
  );
  queue.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'OnlyTheOwnRuleDelivers',
      effect: iam.Effect.DENY,
      principals: [new iam.StarPrincipal()],
      actions: ['sqs:SendMessage'],
      resources: [queue.queueArn],
      conditions: {
        Bool: { 'aws:PrincipalIsAWSService': 'true' },
        ...(ruleArn ? { ArnNotEquals: { 'aws:SourceArn': ruleArn } } : {}),
      },
    }),
  );
}

/**
 * The DLQ takes letters from the group's consumer (its failure router), the bridges (notices) and
 * the operators alone, and no one starts a message-move task from it: SQS's own redrive
 * (`StartMessageMoveTask`, the console's button) moves every letter back unread, past `ops dlq
 * redrive`'s guards (source queue, message group, conflicts, the redrive horizon). SQS's redrive
 * policy still moves messages in: that is SQS acting within its own account, no SendMessage by any
 * principal (docs/security.md cites the AWS documentation), and the DLQ's redrive allow policy names
 * the one source queue that may do it.
 */
export function restrictDeadLetterSenders(deadLetterQueue: sqs.IQueue, senders: Senders): void {
  deadLetterQueue.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'OnlyTheConsumerBridgesAndOperatorsSend',
      effect: iam.Effect.DENY,
      principals: [new iam.StarPrincipal()],
      actions: ['sqs:SendMessage'],
      resources: [deadLetterQueue.queueArn],
      conditions: principalOtherThan(senders),
    }),
  );
  deadLetterQueue.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'NoMoveTaskSkipsTheRedriveGuards',
      effect: iam.Effect.DENY,
      principals: [new iam.StarPrincipal()],
      actions: ['sqs:StartMessageMoveTask'],
      resources: [deadLetterQueue.queueArn],
    }),
  );
}

/** Denies `events:PutEvents` on `bus` to every IAM principal but `senders` (EventBridge needs a statement id). */
export function restrictBusSenders(bus: events.EventBus, senders: Senders): void {
  bus.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'OnlyTheBridgePutsEvents',
      effect: iam.Effect.DENY,
      principals: [new iam.StarPrincipal()],
      actions: ['events:PutEvents'],
      resources: [bus.eventBusArn],
      conditions: principalOtherThan(senders),
    }),
  );
}

/** An IAM principal (not an AWS service) whose ARN is none of the senders'; with no senders, every IAM principal. */
function principalOtherThan(senders: Senders): Record<string, Record<string, unknown>> {
  return {
    BoolIfExists: { 'aws:PrincipalIsAWSService': 'false' },
    ...(senders.roleArns.length > 0 ? { ArnNotLike: { 'aws:PrincipalArn': [...senders.roleArns] } } : {}),
  };
}
