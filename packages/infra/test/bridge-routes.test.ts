import { App, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { checkedRoute } from '../src/bridge/bridge-routes.ts';

describe('bridge routes at synth', () => {
  it('refuses a FIFO route onto an EventBridge bus with the words the bridge uses at start, and keeps the others', () => {
    // Prepare
    const stack = new Stack(new App(), 'Routes');
    const bus = new events.EventBus(stack, 'Bus');
    const dlq = new sqs.Queue(stack, 'Dlq', { fifo: true });
    const queue = new sqs.Queue(stack, 'Queue', { fifo: true });
    const base = { group: 'order-audit-group', topic: 'ORDER_FIFO_TOPIC', dlq };

    // Act + Assess
    expect(() => checkedRoute({ ...base, fifo: true, eventBus: bus })).toThrow(
      /^route order-audit-group: a FIFO route must forward to an SQS FIFO queue, but its target is EventBridge/,
    );
    expect(checkedRoute({ ...base, fifo: true, queue }).queue).toBe(queue);
    expect(checkedRoute({ ...base, fifo: false, eventBus: bus }).eventBus).toBe(bus);
  });
});
