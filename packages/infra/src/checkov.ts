import { CfnResource } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Checkov checks that do not fit this design, each with why: the test lane runs Checkov over the
 * synthesized templates and fails on any finding that is neither fixed nor skipped here
 * (packages/infra/test/checkov.test.ts); docs/security.md lists the same reasons, and the test holds the two
 * equal.
 */
export const CHECKOV_SKIPS = {
  lambdaOutsideVpc: {
    id: 'CKV_AWS_117',
    comment:
      'The functions call only AWS APIs over HTTPS and, for a consumer, its outside services; a VPC adds NAT or endpoints and no trust boundary. A group that must reach a private service runs in one (its vpc stage setting).',
  },
  lambdaEnvironmentKey: {
    id: 'CKV_AWS_173',
    comment:
      'The environment holds resource names, ARNs and settings, never a secret: secrets are read from Secrets Manager at run time, under keys of their own.',
  },
  sqsTriggeredConcurrency: {
    id: 'CKV_AWS_115',
    comment:
      "The SQS event source's maximum concurrency bounds the function (maxConcurrency, 2-1000), which is also the DynamoDB write ceiling; a reserved concurrency would only add throttles.",
  },
  sqsTriggeredDeadLetters: {
    id: 'CKV_AWS_116',
    comment:
      "Invoked by an SQS event source: a failed record returns to its queue and, after the retry schedule, to the group's DLQ (alarmed); a function DLQ applies to asynchronous invocations only.",
  },
  streamTriggeredConcurrency: {
    id: 'CKV_AWS_115',
    comment:
      'An outbox relay runs one invocation per stream shard (parallelization factor 1), which bounds it; a reserved concurrency would only hold a shard back behind throttles.',
  },
  streamTriggeredDeadLetters: {
    id: 'CKV_AWS_116',
    comment:
      "An outbox relay is invoked by its table's stream: what it gives up on goes to the relay DLQ as the event source mapping's on-failure destination (alarmed); a function DLQ applies to asynchronous invocations only.",
  },
  notifierDeadLetters: {
    id: 'CKV_AWS_116',
    comment:
      'Its failed asynchronous invocations go to the notifier DLQ as an on-failure destination (EventInvokeConfig), which Checkov does not read; the DLQ is alarmed.',
  },
  notifierUnreserved: {
    id: 'CKV_AWS_115',
    comment:
      'Left unreserved by the stage (notifierReservedConcurrency: 0); robot rate limiting is shared through a table, so more containers only wait.',
  },
  queueSqsManagedEncryption: {
    id: 'CKV_AWS_27',
    comment:
      'Encrypted with SSE-SQS (SqsManagedSseEnabled), which Checkov does not read. A KMS key would add a key grant for every sender (the bridges, EventBridge, SNS) and guard nothing the queue policy does not: only the consumer and the operators may receive.',
  },
  accessLogBucketOwnLog: {
    id: 'CKV_AWS_18',
    comment: 'It is the access-log bucket: logging its own access would log every log delivery, without end.',
  },
} as const;

export type CheckovSkip = (typeof CHECKOV_SKIPS)[keyof typeof CHECKOV_SKIPS];

/** Records on `construct`'s CloudFormation resource that Checkov skips `skips`, each with its reason. */
export function skipCheckov(construct: IConstruct, ...skips: CheckovSkip[]): void {
  const resource = construct instanceof CfnResource ? construct : construct.node.defaultChild;
  if (!(resource instanceof CfnResource)) throw new Error(`${construct.node.path} has no CloudFormation resource`);
  const existing = (resource.getMetadata('checkov') as { skip?: CheckovSkip[] } | undefined)?.skip ?? [];
  resource.addMetadata('checkov', { skip: [...existing, ...skips.map(({ id, comment }) => ({ id, comment }))] });
}
