import { ConsumerTables, StageDataKey } from '@rocketmq-lambda/infra/index.ts';
import type { Stack } from 'aws-cdk-lib';

/** The stage's data key and the tables under it, as the consumers' stack gives every group. */
export function stageStores(stack: Stack): { dataKey: StageDataKey; tables: ConsumerTables } {
  const dataKey = new StageDataKey(stack, 'DataKey', { prefix: 'unit' });
  return { dataKey, tables: new ConsumerTables(stack, 'Tables', { prefix: 'unit', encryptionKey: dataKey.key }) };
}
