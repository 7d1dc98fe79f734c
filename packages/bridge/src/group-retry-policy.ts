/**
 * A RocketMQ 5 consumer group's retry limit, as it applies to the bridge's own redeliveries.
 *
 * The proxy hands every client of a group `maxAttempts = retryMaxTimes + 1`
 * (`GrpcClientSettingsManager.mergeSubscriptionData`, 5.5.0) and, at each receive, moves a
 * message whose `reconsumeTimes` has reached it to `%DLQ%<group>` instead of delivering it
 * (`PopMessageResultFilterImpl`; the broker's revive only re-puts the message with
 * `reconsumeTimes + 1`). For the bridge's group every redelivery is the bridge's own: a forward
 * SQS refused, an ack that failed, a task that died holding the message. Nothing forwards or
 * alarms on `%DLQ%<group>`, a topic clients cannot even read by default, so a group that
 * dead-letters at the default 17 deliveries loses a message after 17 invisible durations of an
 * SQS outage (17 minutes at 60 s). The bridge therefore refuses to start on a group whose limit
 * its own redeliveries could reach, and says so again whenever the proxy re-sends the settings
 * (every 5 minutes) with a lower limit.
 */

/**
 * The `retryMaxTimes` that never dead-letters: `maxAttempts` becomes `Integer.MAX_VALUE`, which
 * an int `reconsumeTimes` cannot reach. `Integer.MAX_VALUE` itself overflows `retryMaxTimes + 1`
 * to a negative `maxAttempts`, and the proxy then dead-letters every message at its first receive.
 */
export const NEVER_DEAD_LETTER_RETRY_MAX_TIMES = 2_147_483_646;

/**
 * How long the bridge's own redeliveries must run before they could reach the limit: a year of
 * failing forwards, far past any outage the bridge's alarms (ForwardFailed, lag) leave unattended.
 * Redeliveries come at most once per invisible duration, so the limit needed depends on it: at
 * 60 s, 525,600 deliveries.
 */
const REDELIVERY_HORIZON_MS = 365 * 24 * 3600 * 1000;

export class GroupDeadLettersError extends Error {
  override readonly name = 'GroupDeadLettersError';
}

/**
 * Why the group's retry limit is unsafe for the bridge, or `undefined`. `maxAttempts` is what the
 * proxy's settings said (`undefined` when it sent none).
 */
export function groupRetryRefusal(
  group: string,
  maxAttempts: number | undefined,
  invisibleDurationMs: number,
): string | undefined {
  const fix =
    `set it to ${NEVER_DEAD_LETTER_RETRY_MAX_TIMES} (never): mqadmin updateSubGroup -n <nameserver> -c <cluster> ` +
    `-g ${group} -r ${NEVER_DEAD_LETTER_RETRY_MAX_TIMES} (add -o true for a FIFO group)`;
  if (maxAttempts === undefined || maxAttempts <= 0) {
    return (
      `consumer group ${group}: the proxy reported ${maxAttempts === undefined ? 'no retry policy' : `maxAttempts ${maxAttempts}`} ` +
      '(does the group exist? retryMaxTimes 2147483647 overflows and dead-letters every message); ' +
      `the bridge needs a group whose retryMaxTimes its own redeliveries cannot reach: ${fix}`
    );
  }
  const reachedAfterMs = maxAttempts * invisibleDurationMs;
  if (reachedAfterMs >= REDELIVERY_HORIZON_MS) return undefined;
  return (
    `consumer group ${group}: RocketMQ moves a message to %DLQ%${group} once it was delivered ${maxAttempts} times ` +
    `(retryMaxTimes ${maxAttempts - 1}), and the bridge's own redeliveries (one per invisibleDurationMs = ` +
    `${invisibleDurationMs} ms while a forward fails) reach that after ${duration(reachedAfterMs)}; nothing forwards ` +
    `%DLQ%${group}. Raise the group's retryMaxTimes, or ${fix}`
  );
}

function duration(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes < 120) return `${minutes} minutes`;
  const hours = Math.round(minutes / 60);
  return hours < 48 ? `${hours} hours` : `${Math.round(hours / 24)} days`;
}
