import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { AwsConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  deadLetterQueueName,
  lifetimesOf,
  outboundDeadLetterQueueName,
  outboundQueueName,
  outboxDeadLetterQueueName,
  outboxRedriveHorizonOf,
  queueName,
  signingKeySecretName,
  tableName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { DEFAULT_MESSAGE_GROUP_SOURCE, type MessageGroupSource } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { TargetResolutionError } from './errors.ts';

/**
 * Which deployment a command acts on. Names come from the deployment prefix through the
 * same helpers the CDK app and the emulator use, so an operator types one prefix and never
 * a physical name; explicit names override for tables restored under another name.
 */
export interface TargetOptions {
  endpoint?: string;
  region?: string;
  prefix?: string;
  ledgerTable?: string;
  accountsTable?: string;
  group?: string;
  dlqUrl?: string;
  sourceQueueUrl?: string;
  signingSecret?: string;
  /** `dlq --outbox`: the relay DLQ of the (publishing) group instead of its consumer DLQ. */
  outbox?: boolean;
  /** `dlq --outbound`: the bridge's outbound DLQ, whose source is the outbound queue. */
  outbound?: boolean;
}

/** `--endpoint` selects the emulator (dummy credentials); otherwise the default credential chain. */
export function awsConfigOf(options: TargetOptions): AwsConfig {
  return {
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.region ? { region: options.region } : {}),
    // An operator's run may wait out a throttle; the consumers' 3 attempts are tuned for Lambda.
    maxAttempts: 8,
  };
}

/** The envelope signing key secret: `--signing-secret`, else the one the stack names after the prefix. */
export function signingSecretOf(options: TargetOptions): string {
  const secret = options.signingSecret ?? (options.prefix ? signingKeySecretName(options.prefix) : undefined);
  if (!secret)
    throw new TargetResolutionError('name the signing key secret: --prefix <deployment prefix>, or --signing-secret');
  return secret;
}

export interface PointTableNames {
  ledger: string;
  accounts: string;
}

export function pointTablesOf(options: TargetOptions): PointTableNames {
  const ledger = options.ledgerTable ?? (options.prefix ? tableName(options.prefix, 'ledger') : undefined);
  const accounts = options.accountsTable ?? (options.prefix ? tableName(options.prefix, 'accounts') : undefined);
  if (!ledger || !accounts) {
    throw new TargetResolutionError(
      'name the tables: --prefix <deployment prefix>, or --ledger-table and --accounts-table',
    );
  }
  return { ledger, accounts };
}

/** The dedup / idempotency table: `--idempotency-table`, else the one the stack names after the prefix. */
export function idempotencyTableOf(options: TargetOptions & { idempotencyTable?: string }): string {
  const table = options.idempotencyTable ?? (options.prefix ? tableName(options.prefix, 'idempotency') : undefined);
  if (!table) throw new TargetResolutionError('name the tables: --prefix <deployment prefix>, or --idempotency-table');
  return table;
}

export interface GroupQueues {
  group: string;
  deadLetterUrl: string;
  /** Where a redrive sends letters; `undefined` for the relay DLQ, from which nothing is sent (ops outbox redrive is). */
  sourceUrl: string | undefined;
  /** Receives before the source queue's redrive policy moves a message (from the catalogue). */
  maxReceiveCount: number | undefined;
  /**
   * How old a letter's first delivery may be for a redrive to be safe (record TTL − a retry window
   * − the source queue's retention, from the catalogue); `undefined` for a group the catalogue does not know.
   */
  redriveHorizonSeconds: number | undefined;
  /** Where the group's FIFO messages take their message group: its catalogue entry's, else the bridge's default. */
  messageGroupFrom: MessageGroupSource;
}

export async function groupQueuesOf(sqs: SQSClient, options: TargetOptions): Promise<GroupQueues> {
  if (options.outbox && options.outbound) throw new TargetResolutionError('choose --outbox or --outbound, not both');
  if (options.outbound) return outboundQueuesOf(sqs, options);
  const group = options.group;
  if (!group) throw new TargetResolutionError('name the consumer group: --group <consumer-group>');
  const known: ConsumerGroupDefinition | undefined = CONSUMER_GROUPS.find((g) => g.group === group);
  if (options.outbox) {
    const dlq =
      options.dlqUrl ?? (await queueUrlOf(sqs, options, outboxDeadLetterQueueName(options.prefix ?? '', group), 'DLQ'));
    return {
      group,
      deadLetterUrl: dlq,
      sourceUrl: undefined,
      maxReceiveCount: undefined,
      redriveHorizonSeconds: undefined,
      messageGroupFrom: DEFAULT_MESSAGE_GROUP_SOURCE,
    };
  }
  const deadLetterUrl =
    options.dlqUrl ?? (await queueUrlOf(sqs, options, deadLetterQueueName(options.prefix ?? '', group), 'DLQ'));
  const sourceUrl =
    options.sourceQueueUrl ?? (await queueUrlOf(sqs, options, queueName(options.prefix ?? '', group), 'source queue'));
  const lifetimes = known ? lifetimesOf(known) : undefined;
  return {
    group,
    deadLetterUrl,
    sourceUrl,
    maxReceiveCount: (await deployedMaxReceiveCount(sqs, sourceUrl)) ?? lifetimes?.lifetimes.queues.maxReceiveCount,
    redriveHorizonSeconds: lifetimes?.lifetimes.letterRedriveHorizonSeconds(lifetimes.recordTtlSeconds),
    messageGroupFrom: known?.messageGroupFrom ?? DEFAULT_MESSAGE_GROUP_SOURCE,
  };
}

/** The deployed redrive policy wins over the catalogue: it is what actually moved the message. */
async function deployedMaxReceiveCount(sqs: SQSClient, sourceUrl: string): Promise<number | undefined> {
  try {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: sourceUrl, AttributeNames: ['RedrivePolicy'] }),
    );
    const policy = Attributes?.RedrivePolicy
      ? (JSON.parse(Attributes.RedrivePolicy) as { maxReceiveCount?: number | string })
      : undefined;
    return policy?.maxReceiveCount === undefined ? undefined : Number(policy.maxReceiveCount);
  } catch {
    return undefined; // only used to word a reason; the catalogue's value is the fallback
  }
}

async function queueUrlOf(sqs: SQSClient, options: TargetOptions, name: string, what: string): Promise<string> {
  if (!options.prefix)
    throw new TargetResolutionError(
      `name the ${what}: --prefix <deployment prefix>, or --${what === 'DLQ' ? 'dlq-url' : 'source-queue-url'}`,
    );
  try {
    return (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl!;
  } catch (error) {
    throw new TargetResolutionError(`${what} ${name} not found (${(error as Error).name})`);
  }
}

/**
 * The bridge's outbound DLQ and the outbound queue it goes back to (`dlq --outbound`). The redrive horizon is
 * the smallest of the publishing groups' that send to RocketMQ (`outboxRedriveHorizonOf`): a relayed body is
 * born at its item's commit, so it is as old as the item; none when no catalogue group subscribes.
 */
async function outboundQueuesOf(sqs: SQSClient, options: TargetOptions): Promise<GroupQueues> {
  const prefix = options.prefix ?? '';
  const deadLetterUrl = options.dlqUrl ?? (await queueUrlOf(sqs, options, outboundDeadLetterQueueName(prefix), 'DLQ'));
  const sourceUrl =
    options.sourceQueueUrl ?? (await queueUrlOf(sqs, options, outboundQueueName(prefix), 'source queue'));
  const horizons = (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[])
    .filter((g) => g.publishes?.some((p) => p.target === 'rocketmq'))
    .flatMap((g) => outboxRedriveHorizonOf(g) ?? []);
  return {
    group: 'outbound',
    deadLetterUrl,
    sourceUrl,
    maxReceiveCount: await deployedMaxReceiveCount(sqs, sourceUrl),
    redriveHorizonSeconds: horizons.length > 0 ? Math.min(...horizons) : undefined,
    messageGroupFrom: DEFAULT_MESSAGE_GROUP_SOURCE,
  };
}
