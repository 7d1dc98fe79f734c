import { describe, expect, it } from 'vitest';
import { groupRetryRefusal, NEVER_DEAD_LETTER_RETRY_MAX_TIMES } from '../src/group-retry-policy.ts';

describe('a RocketMQ 5 group’s retry limit against the bridge’s own redeliveries', () => {
  it('refuses RocketMQ’s default limit, naming both settings, how soon it is reached, and the fix', () => {
    // The proxy's maxAttempts for the default retryMaxTimes of 16.
    expect(groupRetryRefusal('point-consumer-group', 17, 60_000)).toBe(
      'consumer group point-consumer-group: RocketMQ moves a message to %DLQ%point-consumer-group once it was delivered ' +
        "17 times (retryMaxTimes 16), and the bridge's own redeliveries (one per invisibleDurationMs = 60000 ms while a " +
        "forward fails) reach that after 17 minutes; nothing forwards %DLQ%point-consumer-group. Raise the group's " +
        'retryMaxTimes, or set it to 2147483646 (never): mqadmin updateSubGroup -n <nameserver> -c <cluster> ' +
        '-g point-consumer-group -r 2147483646 (add -o true for a FIFO group)',
    );
    expect(groupRetryRefusal('G', 1_000, 60_000)).toMatch(/reach that after 17 hours/);
    expect(groupRetryRefusal('G', 100_000, 60_000)).toMatch(/reach that after 69 days/);
  });

  it('accepts a limit a year of redeliveries cannot reach, and the never-dead-letter value', () => {
    expect(groupRetryRefusal('G', 525_600, 60_000)).toBeUndefined();
    expect(groupRetryRefusal('G', 525_599, 60_000)).toMatch(/after 365 days/);
    expect(groupRetryRefusal('G', 3_153_600, 10_000)).toBeUndefined();
    expect(groupRetryRefusal('G', NEVER_DEAD_LETTER_RETRY_MAX_TIMES + 1, 10_000)).toBeUndefined();
  });

  it('refuses a group the proxy reported no policy for, and the overflow of retryMaxTimes 2147483647', () => {
    expect(groupRetryRefusal('G', undefined, 60_000)).toMatch(/^consumer group G: the proxy reported no retry policy/);
    expect(groupRetryRefusal('G', -2_147_483_648, 60_000)).toMatch(/maxAttempts -2147483648 .*overflows/);
    expect(groupRetryRefusal('G', 0, 60_000)).toMatch(/maxAttempts 0/);
  });
});
