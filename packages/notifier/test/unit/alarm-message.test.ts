import {
  type CloudWatchAlarmJson,
  dlqAlarmJson,
  metricMathAlarmJson,
  snsEvent,
} from '@rocketmq-lambda/tools/fixtures/sample-alarm-event.ts';
import { describe, expect, it } from 'vitest';
import { alarmConsoleUrl } from '../../src/alarm-console-link.ts';
import { type AlarmNotification, parseSnsEvent } from '../../src/alarm-event.ts';
import { bodyBytes, formatTime, renderNotification, renderSummary } from '../../src/alarm-message.ts';

const options = { timeZone: 'Asia/Shanghai', keyword: '告警', atMobiles: ['13800000000', '13900000000'] };

function notification(json: CloudWatchAlarmJson | string): AlarmNotification {
  return parseSnsEvent(snsEvent(json))[0]!;
}

/** Every markdown link target in the text. */
function linkTargets(text: string): string[] {
  return [...text.matchAll(/\]\(([^)]*)\)/g)].map((m) => m[1]!);
}

describe('alarm message', () => {
  it('marks ALARM clearly, explains it, shows metric, dimensions, local time and a console link, and mentions people', () => {
    // Prepare
    const n = notification(dlqAlarmJson());
    // Act
    const message = renderNotification(n, options);
    // Assess
    const { title, text } = message.markdown;
    expect(message.msgtype).toBe('markdown');
    expect(title).toContain('🔴 ALARM');
    expect(title).toContain('告警');
    expect(text).toContain('### 🔴 ALARM · orders-consumer-dlq-not-empty');
    expect(text).toContain('fix the cause, then redrive them');
    expect(text).toContain('AWS/SQS / ApproximateNumberOfMessagesVisible');
    expect(text).toContain('QueueName = orders-consumer-dlq');
    expect(text).toContain('2026-11-30 11:24:34 (Asia/Shanghai, GMT+8)');
    expect(linkTargets(text)).toEqual([
      'https://ap-northeast-1.console.aws.amazon.com/cloudwatch/home?region=ap-northeast-1#alarmsV2:alarm/orders-consumer-dlq-not-empty',
    ]);
    expect(message.at.atMobiles).toEqual(['13800000000', '13900000000']);
    expect(text).toContain('@13800000000 @13900000000');
    expect(text).toContain('告警');
  });

  it('marks recovery (OK) differently and mentions nobody', () => {
    const message = renderNotification(
      notification(metricMathAlarmJson({ NewStateValue: 'OK', OldStateValue: 'ALARM' })),
      options,
    );
    expect(message.markdown.title).toContain('🟢 OK');
    expect(message.markdown.text).toContain('(was 🔴 ALARM)');
    expect(message.markdown.text).toContain('rate = 100 ∗ errors / invocations');
    expect(message.markdown.text).not.toContain('@138');
    expect(message.at.atMobiles).toEqual([]);
  });

  it('shows times in the configured zone', () => {
    expect(formatTime('2026-11-30T03:24:34.803Z', 'Europe/Berlin')).toBe('2026-11-30 04:24:34 (Europe/Berlin, GMT+1)');
    expect(formatTime('2026-11-30T03:24:34.803Z', 'UTC')).toMatch(/^2026-11-30 03:24:34 \(UTC, GMT(\+0)?\)$/);
  });

  it('neutralises markdown and link injection in user-controlled strings', () => {
    // Prepare
    const n = notification(
      dlqAlarmJson({
        AlarmName: 'x](https://evil.example/steal)[<font color=red>**boom**</font> ![img](http://evil/i.png)',
        AlarmDescription: '# Heading\n- item\n    code block\n[click](javascript:alert(1)) www.evil.example',
        NewStateReason: '<a href="http://evil">x</a> `code` ~~strike~~ | table |',
      }),
    );
    // Act
    const { text, title } = renderNotification(n, options).markdown;
    // Assess: the only link is ours, and no HTML or markup survives from the payload.
    expect(linkTargets(text)).toHaveLength(1);
    expect(linkTargets(text)[0]).toMatch(/^https:\/\/ap-northeast-1\.console\.aws\.amazon\.com\//);
    expect(text).not.toMatch(/<font|<a |!\[|`|~~|javascript:|https?:\/\/evil|www\.evil/);
    expect(text).not.toMatch(/^#\s*Heading/m);
    expect(text).not.toMatch(/^> - item/m);
    expect(title).not.toContain('\n');
    expect(text.match(/^### /gm)).toHaveLength(1);
  });

  it('keeps a 40 KB reason under the 20,000-byte body limit by truncating the reason', () => {
    // Prepare
    const reason = '数据点超过阈值 '.repeat(5_000); // ~40 KB of multi-byte text
    // Act
    const message = renderNotification(notification(dlqAlarmJson({ NewStateReason: reason })), options);
    // Assess
    expect(bodyBytes(message)).toBeLessThanOrEqual(20_000);
    expect(message.markdown.text).toMatch(/characters truncated/);
    expect(message.markdown.text).toContain('fix the cause, then redrive them');
    expect(message.markdown.text).toContain('告警');
  });

  it('shows a malformed message readably', () => {
    const message = renderNotification(notification('{"half": "json'), options);
    expect(message.markdown.title).toContain('Unrecognized');
    expect(message.markdown.text).toContain('the message is not JSON');
    expect(message.markdown.text).toContain('{"half": "json');
  });

  it('folds many alarms into one summary that fits, reporting which ones it took', () => {
    // Prepare
    const many = Array.from({ length: 60 }, (_, i) =>
      notification(dlqAlarmJson({ AlarmName: `consumer-${i}-dlq-not-empty`, NewStateReason: 'r'.repeat(3_000) })),
    );
    // Act
    const { message, included } = renderSummary(many, options);
    // Assess
    expect(included.length).toBeGreaterThan(1);
    expect(included).toEqual(many.slice(0, included.length).map((n) => n.id));
    expect(bodyBytes(message)).toBeLessThanOrEqual(20_000);
    expect(message.markdown.text).toContain(`${included.length} alarm notifications`);
    expect(message.at.atMobiles).toHaveLength(2);
  });

  it('links to the alarm in the region of its ARN, or of its display name, or the fallback', () => {
    const name = 'a (b)';
    expect(
      alarmConsoleUrl({
        alarmName: name,
        alarmArn: 'arn:aws-cn:cloudwatch:cn-north-1:1:alarm:a (b)',
        regionName: null,
      }),
    ).toBe('https://cn-north-1.console.amazonaws.cn/cloudwatch/home?region=cn-north-1#alarmsV2:alarm/a%20%28b%29');
    expect(alarmConsoleUrl({ alarmName: name, alarmArn: null, regionName: 'Europe (Frankfurt)' })).toContain(
      'region=eu-central-1',
    );
    expect(alarmConsoleUrl({ alarmName: name, alarmArn: null, regionName: 'Nowhere' }, 'us-west-2')).toContain(
      'region=us-west-2',
    );
    expect(alarmConsoleUrl({ alarmName: name, alarmArn: null, regionName: null })).toBeNull();
  });
});

describe('alarm message rendering cost', () => {
  it('stays linear on long unbroken text (no regex backtracking)', () => {
    // Prepare
    const n = notification(dlqAlarmJson({ NewStateReason: 'a'.repeat(200_000), AlarmDescription: 'b'.repeat(1_024) }));
    // Act
    const started = performance.now();
    const message = renderNotification(n, options);
    // Assess
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(bodyBytes(message)).toBeLessThanOrEqual(20_000);
  });
});
