import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { consumeInOrder, messageGroups, type Turn } from '../../../../src/consumer/runners/message-groups.ts';
import { messageGroupOf } from '../../../../src/consumer/sqs-attributes.ts';

/** Items named `<group><n>` (`a1`); a name without a group letter (`-1`) belongs to none. */
const groupOf = (name: string) => (name.startsWith('-') ? undefined : name[0]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('messageGroups', () => {
  it('splits a batch into its message groups, each in arrival order, groups in the order they first appear', () => {
    expect(messageGroups(['a1', 'b1', 'a2', 'c1', 'b2', 'a3'], groupOf)).toEqual([
      ['a1', 'a2', 'a3'],
      ['b1', 'b2'],
      ['c1'],
    ]);
  });

  it('makes an item without a group a group of its own', () => {
    expect(messageGroups(['-1', 'a1', '-2', 'a2'], groupOf)).toEqual([['-1'], ['a1', 'a2'], ['-2']]);
  });

  it('reads the group from the record’s MessageGroupId attribute (none on a standard queue)', () => {
    const record = (attributes: Record<string, string>) => ({ attributes }) as unknown as SQSRecord;
    expect(messageGroupOf(record({ MessageGroupId: 'SO1' }))).toBe('SO1');
    expect(messageGroupOf(record({}))).toBeUndefined();
    expect(messageGroupOf(record({ MessageGroupId: '' }))).toBeUndefined();
  });
});

describe('consumeInOrder', () => {
  /** Runs the groups, recording when each item starts and ends; `blocking` items block their group. */
  async function run(
    groups: string[][],
    options: { limit?: number; blocking?: string[]; delayMs?: Record<string, number> } = {},
  ) {
    const events: string[] = [];
    const heldBack: Array<[string, string]> = [];
    await consumeInOrder(
      groups,
      options.limit ?? 10,
      async (item): Promise<Turn> => {
        events.push(`start ${item}`);
        await sleep(options.delayMs?.[item] ?? 1);
        events.push(`end ${item}`);
        return options.blocking?.includes(item) ? 'block' : 'continue';
      },
      (item, blockedBy) => heldBack.push([item, blockedBy]),
    );
    return { events, heldBack, consumed: events.filter((e) => e.startsWith('start ')).map((e) => e.slice(6)) };
  }

  it('consumes one item of a group at a time, in order: the next starts only after the previous ended', async () => {
    const { events } = await run([['a1', 'a2', 'a3']]);
    expect(events).toEqual(['start a1', 'end a1', 'start a2', 'end a2', 'start a3', 'end a3']);
  });

  it('stops a group at its first blocking item and hands every later item to holdBack, never to consume', async () => {
    const { consumed, heldBack } = await run(
      [
        ['a1', 'a2', 'a3', 'a4'],
        ['b1', 'b2'],
      ],
      { blocking: ['a2'] },
    );
    expect(consumed.filter((i) => i.startsWith('a'))).toEqual(['a1', 'a2']);
    expect(heldBack).toEqual([
      ['a3', 'a2'],
      ['a4', 'a2'],
    ]);
    expect(consumed.filter((i) => i.startsWith('b'))).toEqual(['b1', 'b2']);
  });

  it('consumes the groups concurrently: a slow item holds back only its own group', async () => {
    const { events } = await run(
      [
        ['a1', 'a2'],
        ['b1', 'b2'],
      ],
      { delayMs: { a1: 40 } },
    );
    expect(events.indexOf('end b2')).toBeLessThan(events.indexOf('end a1'));
    expect(events.indexOf('start a2')).toBeGreaterThan(events.indexOf('end a1'));
  });

  it('keeps at most `limit` groups running at once', async () => {
    let running = 0;
    let most = 0;
    await consumeInOrder(
      [['a1'], ['b1'], ['c1'], ['d1']],
      2,
      async () => {
        most = Math.max(most, ++running);
        await sleep(5);
        running--;
        return 'continue';
      },
      () => {},
    );
    expect(most).toBe(2);
  });

  it('holds nothing back when the last item of a group blocks', async () => {
    const { heldBack, consumed } = await run([['a1', 'a2']], { blocking: ['a2'] });
    expect(consumed).toEqual(['a1', 'a2']);
    expect(heldBack).toEqual([]);
  });
});
