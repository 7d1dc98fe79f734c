/**
 * `npm run send-test-order -- --prefix rmq-sandbox --region ap-northeast-1 [--group point-consumer-group]
 * [--order SO-SANDBOX-1] [--user u-sandbox] [--points 100]`: one ORDER_TOPIC `PAID` message, signed
 * with the stage's envelope signing key as its bridge would sign it, sent to a group's source queue.
 * A stage without a bridge (a sandbox) has no other sender whose envelopes its consumers accept:
 * an unsigned one is dead-lettered as UNAUTHENTICATED_MESSAGE. Run it with a role of the stage's
 * `operatorRoleArns` (or `senderRoleArns`): the queue and secret policies refuse anyone else.
 * Sent twice, the same order is one award (the second copy is a duplicate). docs/deploy.md, "A sandbox".
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { GetQueueUrlCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  type AwsConfig,
  createSecretsManager,
  createSqs,
  SecretSigningKeys,
} from '@rocketmq-lambda/runtime/aws/index.ts';
import { CONSUMER_GROUPS, queueName, signingKeySecretName } from '@rocketmq-lambda/runtime/config/index.ts';
import { MsgIdGenerator, resignBody, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';

export interface TestOrder {
  readonly aws: AwsConfig;
  readonly prefix: string;
  readonly group: string;
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
}

/** Sends the order's `PAID` once, signed with the key the stage's secret holds now; returns what was sent. */
export async function sendTestOrder(order: TestOrder): Promise<{ queueUrl: string; msgId: string; body: string }> {
  const definition = CONSUMER_GROUPS.find((g) => g.group === order.group);
  if (!definition) throw new Error(`${order.group} is not a consumer group of the catalogue`);
  const secrets = createSecretsManager(order.aws);
  const sqs = createSqs(order.aws);
  try {
    const key = await new SecretSigningKeys(secrets, signingKeySecretName(order.prefix)).current();
    const msgId = new MsgIdGenerator().next();
    const { orderNo, userId, points } = order;
    const body = resignBody(
      writeEnvelope({
        topic: definition.topic,
        msgId,
        tags: 'PAID',
        keys: [orderNo],
        body: JSON.stringify({ orderNo, userId, points, paidAt: new Date().toISOString() }),
      }),
      key,
    );
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: queueName(order.prefix, order.group) }));
    const queueUrl = QueueUrl!;
    // An orderly group's queue is FIFO: the order is its message group, the msgId its deduplication id (as the bridge sends).
    const fifo = queueUrl.endsWith('.fifo') ? { MessageGroupId: orderNo, MessageDeduplicationId: msgId } : {};
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, ...fifo }));
    return { queueUrl, msgId, body };
  } finally {
    secrets.destroy();
    sqs.destroy();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      prefix: { type: 'string' },
      region: { type: 'string' },
      endpoint: { type: 'string' },
      group: { type: 'string', default: 'point-consumer-group' },
      order: { type: 'string', default: 'SO-SANDBOX-1' },
      user: { type: 'string', default: 'u-sandbox' },
      points: { type: 'string', default: '100' },
    },
  });
  if (!values.prefix) throw new Error('--prefix names the stage (its prefix in the settings)');
  const points = Number(values.points);
  if (!Number.isSafeInteger(points) || points <= 0)
    throw new Error(`--points must be a positive whole number, got ${values.points}`);
  const sent = await sendTestOrder({
    aws: {
      region: values.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION,
      endpoint: values.endpoint,
    },
    prefix: values.prefix,
    group: values.group,
    orderNo: values.order,
    userId: values.user,
    points,
  });
  process.stdout.write(`sent ${values.order} (msgId ${sent.msgId}) to ${sent.queueUrl}, signed with the stage's key\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    process.stderr.write(`send-test-order: ${(error as Error).message}\n`);
    process.exitCode = 1;
  });
}
