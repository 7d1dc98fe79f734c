import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { RoundTrip } from './round-trip-counter.ts';

/** The parts of a DynamoDB write request (wire format) the counting reads. */
interface WireInput {
  TableName?: string;
  Item?: Record<string, AttributeValue>;
  TransactItems?: TransactWriteItem[];
}

/**
 * Write units a request consumed, from DynamoDB's documented rules (on-demand and
 * provisioned alike): a standard write costs 1 unit per started KB of the item, a
 * transactional write 2 units per started KB for every item it writes, and a standard
 * write whose condition fails still costs 1 unit. A cancelled transaction writes no item
 * and is counted as 0 here. `Update`s are counted at 1 KB: the items they touch here are
 * far smaller (the rule uses the larger of the item before and after).
 */
export function writeUnitsOf(trip: RoundTrip): number {
  const input = trip.input as WireInput;
  switch (trip.command) {
    case 'TransactWriteItemsCommand':
      if (trip.error) return 0;
      return (input.TransactItems ?? []).reduce((sum, action) => sum + transactionalUnits(action), 0);
    case 'PutItemCommand':
      return trip.error === 'ConditionalCheckFailedException' ? 1 : trip.error ? 0 : kilobytes(input.Item);
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      return trip.error && trip.error !== 'ConditionalCheckFailedException' ? 0 : 1;
    default:
      return 0;
  }
}

/**
 * The part of `writeUnitsOf(trip)` spent on items of `table` (an outbox table: what publishing adds to
 * a transaction beside the effect).
 */
export function writeUnitsOn(trip: RoundTrip, table: string): number {
  const input = trip.input as WireInput;
  if (trip.command !== 'TransactWriteItemsCommand') return input.TableName === table ? writeUnitsOf(trip) : 0;
  if (trip.error) return 0;
  return (input.TransactItems ?? [])
    .filter((action) => (action.Put ?? action.Update ?? action.Delete)?.TableName === table)
    .reduce((sum, action) => sum + transactionalUnits(action), 0);
}

/** One action of a committed transaction: 2 units per started KB of a put item, 2 for an update or a delete. */
function transactionalUnits(action: TransactWriteItem): number {
  if (action.Put) return 2 * kilobytes(action.Put.Item);
  if (action.Update || action.Delete) return 2;
  return 0; // ConditionCheck writes nothing
}

/** Is this request a write that took effect (a business write when it targets a business table)? */
export function writtenTables(trip: RoundTrip): string[] {
  if (trip.error) return [];
  const input = trip.input as WireInput;
  if (trip.command === 'TransactWriteItemsCommand') {
    return (input.TransactItems ?? []).flatMap((a) => {
      const table = (a.Put ?? a.Update ?? a.Delete)?.TableName;
      return table ? [table] : [];
    });
  }
  if (['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'].includes(trip.command) && input.TableName)
    return [input.TableName];
  return [];
}

const kilobytes = (item: Record<string, AttributeValue> | undefined) =>
  Math.max(1, Math.ceil(itemBytes(item ?? {}) / 1024));

/** Item size as DynamoDB counts it: attribute names plus values (numbers ≈ 1 byte per 2 digits + 1). */
export function itemBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + valueBytes(value), 0);
}

function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/[-.]/g, '').replace(/^0+/, '').length / 2) + 1;
  if (value.B !== undefined) return value.B.length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L) return 3 + value.L.reduce((s, v) => s + 1 + valueBytes(v), 0);
  if (value.M) return 3 + itemBytes(value.M);
  if (value.SS) return value.SS.reduce((s, v) => s + Buffer.byteLength(v), 0);
  if (value.NS) return value.NS.reduce((s, v) => s + v.length, 0);
  return 0;
}
