import { setTimeout as sleep } from 'node:timers/promises';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import type { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';

/** The points consumer polling its queue behind the bridge, as Lambda's SQS event source mapping would, until stopped. */
export function pollPointsQueue(points: Awaited<ReturnType<typeof pointsFixture>>): { stop(): Promise<void> } {
  const queue = points.resources.queues[POINTS_GROUP]!;
  let polling = true;
  const loop = (async () => {
    while (polling) {
      const poll = await pollOnce({
        sqs: points.sqs,
        queueUrl: queue.source.url,
        queueArn: queue.source.arn,
        handler: points.handler,
        functionName: 'points-consumer',
      });
      if (poll.received === 0) await sleep(200);
    }
  })();
  return {
    stop: async () => {
      polling = false;
      await loop;
    },
  };
}
