/**
 * The notification group's part in the chaos run: lease mode around a call to the notification
 * service, keyed on the outbox event id of a relayed POINTS_AWARDED (never the msgId).
 *
 * It gets the points group's real announcements through the run's relay (when the points group runs),
 * and a workload of its own on POINTS_TOPIC written as the relay writes it: one event per award, the
 * event id as msgId, first key and `OUTBOX_EVENT_ID` property; the relay's re-sends (a crash after
 * the send, before the mark) as redeliveries of the same msgId; a carrier that mints a new msgId
 * for the same event (RocketMQ 5 clients); an event id reused for another award (a conflict);
 * and a copy stripped of its event id (a carrier that kept neither keys nor properties).
 * The award events it must have notified are its workload's and every item the publisher's outbox
 * holds that the relay did not refuse.
 *
 * Invariant, one notification per award event and none without one, from the idempotency table:
 * - every award event has a COMPLETED lease holding the notification the service sent; one left
 *   IN_PROGRESS or missing is a lost notification;
 * - no record exists for an event id the workload never announced (a notification without an
 *   award), and an award is recorded under its event id alone (one per award, whatever its msgIds);
 * - the conflicting reuse is dead-lettered as PAYLOAD_CONFLICT, the stripped copy as INVALID_PAYLOAD.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  eventIdOf,
  OUTBOX_EVENT_ID_PROPERTY,
  type OutboxItem,
  OutboxStatus,
  recordId,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { type DedupRecord, RecordStatus } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { seededRandom } from '../../local/seeded-random.ts';
import { trafficMessage } from '../../local/traffic.ts';
import {
  type ChaosFact,
  type ChaosMessage,
  type ChaosPlugin,
  type ExpectedDeadLetter,
  type GroupVerdict,
  UnexpectedFactError,
} from '../chaos-plugin.ts';
import { crashInsideLease } from '../crash-points.ts';
import { redeliverLater } from '../workload.ts';

const GROUP = 'notification-consumer-group';
const POINTS_TOPIC = 'POINTS_TOPIC';
const PUBLISHER = 'point-consumer-group';

/** A relayed POINTS_AWARDED: one award, announced under its event id. */
interface AwardEventFact extends ChaosFact {
  readonly kind: 'award-event';
  readonly eventId: string;
  readonly orderNo: string;
}
/** An event id reused for another award: the same key with another body. */
interface ConflictingEventFact extends ChaosFact {
  readonly kind: 'conflicting-event';
  readonly eventId: string;
}
/** A copy with neither the event-id property nor a key. */
interface EventWithoutIdFact extends ChaosFact {
  readonly kind: 'event-without-id';
}
type PointsTopicFact = AwardEventFact | ConflictingEventFact | EventWithoutIdFact;
const KINDS: ReadonlySet<string> = new Set(['award-event', 'conflicting-event', 'event-without-id']);

interface Award {
  readonly eventId: string;
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
}

/** POINTS_TOPIC as the relay writes it: msgId = event id, the event id first among the keys, cluster `outbox-<group>`. */
class RelayedAwards {
  private readonly carrierIds: MsgIdGenerator;
  private clock: number;

  constructor(private readonly seed: number) {
    this.clock = Date.UTC(2024, 0, 1) + (Math.abs(seed) % 1_000_000) * 1000;
    this.carrierIds = new MsgIdGenerator('0A0E0A07', seed & 0xffff);
  }

  awards(count: number, random: () => number): Award[] {
    const users = Array.from({ length: Math.max(5, Math.floor(count / 15)) }, (_, i) => `u${this.seed}-n${i}`);
    return Array.from({ length: count }, (_, i) => {
      const orderNo = `SO${Math.abs(this.seed).toString(36).toUpperCase()}N${String(i).padStart(6, '0')}`;
      const userId = users[Math.floor(random() * users.length)]!;
      return { eventId: eventIdOf(PUBLISHER, orderNo, 0), orderNo, userId, points: 1 + Math.floor(random() * 500) };
    });
  }

  /** The relay's copy; `newMsgId`: a carrier that minted its own msgId for the same event. */
  relayed(award: Award, label: string, newMsgId = false): ChaosMessage<AwardEventFact> {
    const { eventId, orderNo, userId, points } = award;
    const body = JSON.stringify({ orderNo, userId, points });
    const fact: AwardEventFact = { kind: 'award-event', eventId, orderNo };
    return this.message(body, fact, label, { eventId, keys: [eventId, orderNo], newMsgId });
  }

  conflicting(award: Award): ChaosMessage<ConflictingEventFact> {
    const body = JSON.stringify({ orderNo: award.orderNo, userId: `${award.userId}x`, points: award.points + 1 });
    const fact: ConflictingEventFact = { kind: 'conflicting-event', eventId: award.eventId };
    return this.message(body, fact, 'event id reused for another award', {
      eventId: award.eventId,
      keys: [award.eventId],
      newMsgId: true,
    });
  }

  withoutId(award: Award): ChaosMessage<EventWithoutIdFact> {
    const body = JSON.stringify({ orderNo: `${award.orderNo}X`, userId: award.userId, points: award.points });
    return this.message(body, { kind: 'event-without-id' }, 'copy without an event id', { keys: [], newMsgId: true });
  }

  private message<F extends ChaosFact>(
    body: string,
    fact: F,
    label: string,
    id: { eventId?: string; keys: string[]; newMsgId: boolean },
  ): ChaosMessage<F> {
    const born = this.clock++;
    const envelope = writeEnvelope({
      topic: POINTS_TOPIC,
      msgId: id.newMsgId || !id.eventId ? this.carrierIds.next(born) : id.eventId,
      tags: 'POINTS_AWARDED',
      keys: id.keys,
      body,
      // Born at the seed's time, stored when sent (as the order producers' copies are): the relay's
      // store time is the commit, and a commit of this run is recent, inside every redrive horizon.
      bornTimestamp: born,
      cluster: `outbox-${PUBLISHER}`,
      userProperties: id.eventId ? { [OUTBOX_EVENT_ID_PROPERTY]: id.eventId } : {},
    });
    return { ...trafficMessage(envelope, { label }), fact };
  }
}

function pointsTopicFact(message: ChaosMessage): PointsTopicFact {
  if (!KINDS.has(message.fact.kind)) throw new UnexpectedFactError(GROUP, message);
  return message.fact as PointsTopicFact;
}

/** The publisher's committed announcements (not those the relay refused for good): event id → order. */
async function relayedEvents(
  dynamoDb: DynamoDBDocumentClient,
  outboxTable: string | undefined,
): Promise<Map<string, string>> {
  const events = new Map<string, string>();
  if (!outboxTable) return events;
  for (const item of await scanTable<OutboxItem>(dynamoDb, outboxTable))
    if (item.status !== OutboxStatus.FAILED) events.set(item.eventId, item.businessKey);
  return events;
}

export const chaosPlugin: ChaosPlugin = {
  group: GROUP,
  crashPointName: 'inside a lease',

  workload({ seed, messages }) {
    const random = seededRandom(seed ^ 0x0a7e);
    const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));
    const composition = {
      awards: 0,
      newMsgIds: share(0.05),
      redeliveries: share(0.06),
      conflicts: share(0.01),
      withoutId: share(0.01),
    };
    composition.awards =
      messages - composition.newMsgIds - composition.redeliveries - composition.conflicts - composition.withoutId;
    const relay = new RelayedAwards(seed);
    const awards = relay.awards(composition.awards, random);
    const stream: ChaosMessage[] = awards.map((a) => relay.relayed(a, 'award event'));
    for (let i = 0; i < composition.newMsgIds; i++)
      stream.push(relay.relayed(awards[i % awards.length]!, 'the same event under a new msgId', true));
    for (let i = 0; i < composition.withoutId; i++) stream.push(relay.withoutId(awards[i % awards.length]!));
    redeliverLater(stream, composition.redeliveries, random);
    // Sent once the originals settled: which copy of one event id wins the lease is then fixed.
    const conflicts = Array.from({ length: composition.conflicts }, (_, i) =>
      relay.conflicting(awards[(i * 7) % awards.length]!),
    );
    return {
      phases: [
        { name: 'award events, relayed at least once', messages: stream },
        { name: 'event ids reused for another award', messages: conflicts },
      ],
      composition,
    };
  },

  expect(received) {
    const events = new Map<string, string>();
    const deadLetters: ExpectedDeadLetter[] = [];
    for (const message of received) {
      const fact = pointsTopicFact(message);
      if (fact.kind === 'award-event') events.set(fact.eventId, fact.orderNo);
      else if (fact.kind === 'conflicting-event') deadLetters.push({ body: message.body, code: 'PAYLOAD_CONFLICT' });
      else deadLetters.push({ body: message.body, code: 'INVALID_PAYLOAD' });
    }
    return {
      deadLetters,
      crashTargets: { msgIds: [], keys: [...events.keys()] },
      judge: async ({ dynamoDb, tables, outboxTables, unsettled, cutShort }): Promise<GroupVerdict> => {
        const relayed = await relayedEvents(dynamoDb, outboxTables[PUBLISHER]);
        for (const [eventId, orderNo] of relayed) events.set(eventId, orderNo);
        const records = new Map<string, Partial<DedupRecord>>();
        for (const r of await scanTable<Record<string, unknown>>(dynamoDb, tables.idempotency))
          if (r.group === GROUP) records.set(String(r.key), r as Partial<DedupRecord>);
        const pending = new Set(unsettled.map((m) => ('eventId' in m.fact ? String(m.fact.eventId) : '')));
        const violations: string[] = [];
        let lostEffects = 0;
        let notJudged = 0;
        for (const [eventId, orderNo] of events) {
          const r = records.get(eventId);
          if (r?.status === RecordStatus.COMPLETED && r.result !== undefined && r.result !== null) continue;
          if (pending.has(eventId) || (cutShort && relayed.has(eventId))) {
            notJudged++;
            continue;
          }
          lostEffects++;
          violations.push(`award ${orderNo} (event ${eventId}): notification record is ${r?.status ?? 'missing'}`);
        }
        const withoutAward = [...records.keys()].filter((key) => !events.has(key));
        for (const key of withoutAward) violations.push(`notification record ${key} for no award event`);
        return {
          doubleEffects: withoutAward.length,
          lostEffects,
          violations,
          notJudged,
          detail: { awardEvents: events.size, notified: records.size - withoutAward.length },
        };
      },
    };
  },

  /** The lease holder dies after the notification call, before the `UpdateItem` that completes its record. */
  crashPoint(keys) {
    return crashInsideLease(keys, (key) => recordId(GROUP, key), 'notification call');
  },
};
