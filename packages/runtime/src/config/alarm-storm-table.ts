/**
 * The small DynamoDB table that lets concurrent notifier invocations share one robot's message
 * budget and its backlog of alarms. The CDK app creates exactly this; the notifier's item layout is
 * in packages/notifier/src/alarm-storm-table.ts.
 *
 * Items (all under `pk = robot#<robotId>`):
 * - `sk = bucket`: the robot's token bucket (`tokens`, `refilledAt`, `pausedUntil`, `version`).
 * - `sk = pending#<SNS timestamp>#<SNS MessageId>`: one alarm waiting for delivery
 *   (`notification`, `claimedBy`, `leaseUntil`); deleted once DingTalk accepted it.
 * - `sk = delivered#<same key>`: a tombstone kept for a day (`expiresAt`) so a Lambda retry of an
 *   already delivered alarm does not post it again. Kept apart from `pending#` so the backlog
 *   query never has to read through them.
 */
export const ALARM_STORM_TABLE = {
  /** Suggested construct id / name suffix. */
  nameSuffix: 'DingTalkAlarmStorm',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  /** Epoch seconds; only ever used to clean up tombstones, never to decide delivery. */
  timeToLiveAttribute: 'expiresAt',
  billingMode: 'PAY_PER_REQUEST',
  /** Environment variable the notifier reads the table name from. */
  tableNameEnv: 'ALARM_STORM_TABLE_NAME',
} as const;
