import type { CrashPoint } from './process-crash.ts';

/**
 * An attribute as the document client has it, or as the base client marshalled it (`{S: …}`): crash points see the
 * latter.
 */
export function plainAttribute(value: unknown): unknown {
  if (value && typeof value === 'object' && 'S' in value) return value.S;
  return value;
}

/**
 * For a state-transition group: the process dies inside the conditional update of each of
 * `keys`, once, where `keyOf` reads an update's business key (`SO1#PAID`) from its input. The
 * update reaches DynamoDB and is applied; the answer never reaches the consumer, nothing
 * after it is sent, and the batch comes back: its redelivery must find the state already
 * moved on and settle as a duplicate.
 */
export function crashInsideConditionalUpdate(
  keys: readonly string[],
  keyOf: (update: Record<string, unknown>) => string | undefined,
): CrashPoint {
  const pending = new Set(keys);
  return (command, input) => {
    if (command !== 'UpdateItemCommand' || pending.size === 0) return undefined;
    const key = keyOf(input);
    if (key === undefined || !pending.delete(key)) return undefined;
    return { why: `crash inside the conditional update of ${key}, after it reached DynamoDB`, afterSending: true };
  };
}

/** An attribute of an update's `Key` or `ExpressionAttributeValues`, as a plain value. */
export function updateAttribute(
  update: Record<string, unknown>,
  from: 'Key' | 'ExpressionAttributeValues',
  name: string,
): unknown {
  return plainAttribute((update[from] as Record<string, unknown> | undefined)?.[name]);
}

/**
 * For a lease group: the lease holder dies once for each of `keys`, after its outside call, before
 * the `UpdateItem` that completes its record (`recordIdOf(key)`): the lease stays IN_PROGRESS until
 * it expires, and the copy that takes it over must get the call's first result back, not a second.
 */
export function crashInsideLease(
  keys: readonly string[],
  recordIdOf: (key: string) => string,
  call: string,
): CrashPoint {
  const pending = new Map(keys.map((k) => [recordIdOf(k), k]));
  return (command, input) => {
    if (command !== 'UpdateItemCommand' || pending.size === 0) return undefined;
    const id = updateAttribute(input, 'Key', 'id');
    const completing = String(input.UpdateExpression ?? '').includes(':completed');
    if (!completing || typeof id !== 'string' || !pending.has(id)) return undefined;
    const key = pending.get(id)!;
    pending.delete(id);
    return { why: `crash inside the lease on ${key}, after the ${call}` };
  };
}
