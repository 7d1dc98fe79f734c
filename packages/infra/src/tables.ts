import { TABLES, type TableDefinition, type TableKey, tableName } from '@rocketmq-lambda/runtime/config/index.ts';
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';

export interface ConsumerTablesProps {
  /** Physical names are `<prefix>-<suffix>`, the same names the local emulator uses. */
  readonly prefix: string;
  /** The stage's data key (packages/infra/src/data-key.ts). */
  readonly encryptionKey: kms.IKey;
}

/**
 * The consumers' DynamoDB tables, built from `TABLES` in `packages/runtime/src/config/resources.ts` so the
 * keys and the TTL attribute are exactly those the local emulator and the code use.
 * Key design and hot-key limits: docs/deploy.md#tables.
 *
 * Every one is retained and deletion-protected: the business tables hold the business, and the
 * idempotency table holds what keeps it exactly once (without its records a redelivered or
 * re-sent order is awarded again).
 */
export class ConsumerTables extends Construct {
  private readonly byKey = new Map<TableKey, dynamodb.Table>();

  constructor(scope: Construct, id: string, props: ConsumerTablesProps) {
    super(scope, id);
    for (const [key, definition] of Object.entries(TABLES) as [TableKey, TableDefinition][]) {
      this.byKey.set(key, this.createTable(key, definition, props));
    }
  }

  table(key: TableKey): dynamodb.Table {
    const table = this.byKey.get(key);
    if (!table) throw new UnknownTableError(key);
    return table;
  }

  private createTable(key: TableKey, definition: TableDefinition, props: ConsumerTablesProps): dynamodb.Table {
    return new dynamodb.Table(this, pascal(key), {
      // A fixed name keeps CloudFormation from ever replacing a table with a fresh, empty one.
      tableName: tableName(props.prefix, key),
      partitionKey: { name: definition.partitionKey, type: dynamodb.AttributeType.STRING },
      ...(definition.sortKey ? { sortKey: { name: definition.sortKey, type: dynamodb.AttributeType.STRING } } : {}),
      ...(definition.ttlAttribute ? { timeToLiveAttribute: definition.ttlAttribute } : {}),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: props.encryptionKey,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}

export class UnknownTableError extends Error {
  override readonly name = 'UnknownTableError';
  constructor(readonly key: string) {
    super(`no table ${JSON.stringify(key)} in the catalogue`);
  }
}

function pascal(key: string): string {
  return key.charAt(0).toUpperCase() + key.slice(1);
}
