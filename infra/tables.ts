import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { TABLES, type TableDefinition, type TableKey, tableName } from '../lib/config/index.ts';

export interface ConsumerTablesProps {
  /** Physical names are `<prefix>-<suffix>`, the same names the local emulator uses. */
  readonly prefix: string;
}

/**
 * The consumers' DynamoDB tables, built from `TABLES` in `lib/config/resources.ts` so the
 * keys and the TTL attribute are exactly those the local emulator and the code use.
 * Key design and hot-key limits: docs/deploy.md#tables.
 */
export class ConsumerTables extends Construct {
  private readonly byKey = new Map<TableKey, dynamodb.Table>();

  constructor(scope: Construct, id: string, props: ConsumerTablesProps) {
    super(scope, id);
    for (const [key, definition] of Object.entries(TABLES) as [TableKey, TableDefinition][]) {
      this.byKey.set(key, this.createTable(key, definition, props.prefix));
    }
  }

  table(key: TableKey): dynamodb.Table {
    const table = this.byKey.get(key);
    if (!table) throw new UnknownTableError(key);
    return table;
  }

  private createTable(key: TableKey, definition: TableDefinition, prefix: string): dynamodb.Table {
    return new dynamodb.Table(this, pascal(key), {
      // A fixed name keeps CloudFormation from ever replacing a table with a fresh, empty one.
      tableName: tableName(prefix, key),
      partitionKey: { name: definition.partitionKey, type: dynamodb.AttributeType.STRING },
      ...(definition.sortKey ? { sortKey: { name: definition.sortKey, type: dynamodb.AttributeType.STRING } } : {}),
      ...(definition.ttlAttribute ? { timeToLiveAttribute: definition.ttlAttribute } : {}),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // A key in the account's KMS (aws/dynamodb) puts every decryption in CloudTrail.
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: definition.holdsBusinessData,
      removalPolicy: definition.holdsBusinessData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
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
