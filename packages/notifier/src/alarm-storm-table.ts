/**
 * Item layout of the alarm-storm table (its definition, which the CDK app creates, is
 * `ALARM_STORM_TABLE` in packages/runtime/src/config/alarm-storm-table.ts).
 */
export const robotPartitionKey = (robotId: string) => `robot#${robotId}`;
export const BUCKET_SORT_KEY = 'bucket';
export const PENDING_PREFIX = 'pending#';
export const DELIVERED_PREFIX = 'delivered#';
