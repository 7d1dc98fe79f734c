import { dlqAlarmJson, metricMathAlarmJson, snsEvent } from '@rocketmq-lambda/tools/fixtures/sample-alarm-event.ts';
import { describe, expect, it } from 'vitest';
import { parseSnsEvent, toIsoInstant } from '../../src/alarm-event.ts';

describe('alarm event parsing', () => {
  it('reads a single-metric CloudWatch alarm with its dimensions', () => {
    // Prepare
    const event = snsEvent(dlqAlarmJson(), { messageId: 'm-1', timestamp: '2026-11-30T03:24:35.000Z' });
    // Act
    const [n] = parseSnsEvent(event);
    // Assess
    expect(n).toMatchObject({
      kind: 'alarm',
      id: 'm-1',
      receivedAt: '2026-11-30T03:24:35.000Z',
      alarm: {
        alarmName: 'orders-consumer-dlq-not-empty',
        state: 'ALARM',
        previousState: 'OK',
        stateChangeTime: '2026-11-30T03:24:34.803Z',
        regionName: 'Asia Pacific (Tokyo)',
        trigger: {
          kind: 'metric',
          metricName: 'ApproximateNumberOfMessagesVisible',
          namespace: 'AWS/SQS',
          dimensions: [{ name: 'QueueName', value: 'orders-consumer-dlq' }],
          threshold: 0,
          comparisonOperator: 'GreaterThanThreshold',
          period: 60,
          evaluationPeriods: 1,
        },
      },
    });
  });

  it('reads a metric-math alarm (Trigger.Metrics[])', () => {
    const [n] = parseSnsEvent(snsEvent(metricMathAlarmJson()));
    expect(n?.kind).toBe('alarm');
    if (n?.kind !== 'alarm') return;
    expect(n.alarm.trigger).toMatchObject({
      kind: 'metric-math',
      threshold: 5,
      metrics: [
        { id: 'rate', expression: '100 * errors / invocations', returnData: true },
        {
          id: 'errors',
          metricName: 'Errors',
          namespace: 'AWS/Lambda',
          stat: 'Sum',
          dimensions: [{ name: 'FunctionName', value: 'payments-consumer' }],
        },
        { id: 'invocations', metricName: 'Invocations' },
      ],
    });
  });

  it('treats a null description as absent and keeps OK transitions', () => {
    const [n] = parseSnsEvent(
      snsEvent(dlqAlarmJson({ AlarmDescription: null, NewStateValue: 'OK', OldStateValue: 'ALARM' })),
    );
    expect(n).toMatchObject({ kind: 'alarm', alarm: { description: null, state: 'OK', previousState: 'ALARM' } });
  });

  it('keeps a non-JSON publish as an unrecognized message instead of dropping it', () => {
    const [n] = parseSnsEvent(snsEvent('hello from the console', { subject: 'test publish' }));
    expect(n).toMatchObject({
      kind: 'unrecognized',
      subject: 'test publish',
      body: 'hello from the console',
      problem: 'the message is not JSON',
    });
  });

  it('keeps JSON that is not an alarm as an unrecognized message naming what is missing', () => {
    const [n] = parseSnsEvent(snsEvent({ hello: 'world' }));
    expect(n?.kind).toBe('unrecognized');
    if (n?.kind !== 'unrecognized') return;
    expect(n.problem).toContain('AlarmName');
    expect(n.body).toBe('{"hello":"world"}');
  });

  it('survives an event that is not SNS at all', () => {
    const notifications = parseSnsEvent({ foo: 1 });
    expect(notifications).toHaveLength(1);
    expect(notifications[0]).toMatchObject({ kind: 'unrecognized', problem: 'the event is not an SNS event' });
  });

  it('does not lose the alarm when only the trigger is odd', () => {
    const [n] = parseSnsEvent(snsEvent(dlqAlarmJson({ Trigger: { Something: 'else' } })));
    expect(n).toMatchObject({ kind: 'alarm', alarm: { trigger: null } });
  });

  it('normalises CloudWatch timestamps with a +0000 offset', () => {
    expect(toIsoInstant('2026-11-30T03:24:34.803+0000')).toBe('2026-11-30T03:24:34.803Z');
    expect(toIsoInstant('2026-11-30T11:24:34.803+0800')).toBe('2026-11-30T03:24:34.803Z');
    expect(toIsoInstant('garbage')).toBeNull();
  });
});
