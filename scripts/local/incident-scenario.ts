import { MsgIdGenerator, writeEnvelope } from '../../lib/rocketmq/index.ts';
import { seededRandom } from './seeded-random.ts';
import { type TrafficMessage, type TrafficPhase, trafficMessage } from './traffic.ts';

export const INCIDENT_ORDER = { orderNo: 'SO202007051422310088', userId: '88372', points: 300 } as const;
const POINTS_GROUP = 'point-consumer-group';
const TOPIC = 'ORDER_TOPIC';

/** A fault the scenario injects: the invocation holding `msgId` dies after its commit, before the batch is deleted. */
export interface CrashAfterCommit {
  readonly group: string;
  readonly msgId: string;
}

export interface Scenario {
  readonly title: string;
  readonly phases: readonly TrafficPhase[];
  readonly crashes: readonly CrashAfterCommit[];
  /** The order the report follows message by message. */
  readonly focusOrderNo: string;
}

/**
 * The incident, replayed: order SO202007051422310088 of user 88372 (300 points)
 * delivered twice with one msgId 2.4 s apart, then re-sent by the application with a new
 * msgId; a burst of ordinary orders, one of which crashes its consumer after the commit,
 * before the ack; one producer bug sends a truncated body; some orders then finish
 * (`FINISHED`, which the points and coupon groups filter); and once everything is
 * consumed a rebalance resets the points group's offsets and replays a block of
 * processed messages.
 */
export function incidentScenario(options: { seed?: number; burst?: number } = {}): Scenario {
  const random = seededRandom(options.seed ?? 20200705);
  const ids = new MsgIdGenerator('0A1B2C3D', 0x2a9f);
  const incidentAt = Date.UTC(2020, 6, 5, 14, 22, 31);
  const envelope = (body: unknown, msgId: string, at: number, tags = 'PAID', orderNo?: string) =>
    writeEnvelope({
      topic: TOPIC,
      msgId,
      tags,
      keys: orderNo ? [orderNo] : [],
      body: typeof body === 'string' ? body : JSON.stringify(body),
      bornTimestamp: at,
      queueId: 0,
    });

  const original = ids.next(incidentAt);
  const paidAt = new Date(incidentAt).toISOString();
  const incidentBody = { ...INCIDENT_ORDER, paidAt };
  const firstCopy = envelope(incidentBody, original, incidentAt, 'PAID', INCIDENT_ORDER.orderNo);
  const resend = ids.next(incidentAt + 3000);

  const burst: TrafficMessage[] = [];
  const burstSize = options.burst ?? 80;
  for (let i = 1; i <= burstSize; i++) {
    const at = incidentAt + 1000 + i * 7;
    const orderNo = `SO20200705142232${String(i).padStart(4, '0')}`;
    const userId = String(10001 + Math.floor(random() * 20));
    const points = 10 * (1 + Math.floor(random() * 50));
    burst.push(
      trafficMessage(
        envelope({ orderNo, userId, points, paidAt: new Date(at).toISOString() }, ids.next(at), at, 'PAID', orderNo),
        { label: 'ordinary order', atMs: 100 + i * 5 },
      ),
    );
  }
  // Every eighth order is finished later: the status group moves it, points and coupons filter the tag.
  const finishedAt = incidentAt + 60_000;
  const finished = burst
    .filter((_, i) => (i + 1) % 8 === 0)
    .map((m, i) => {
      const orderNo = (JSON.parse(JSON.parse(m.body).data.body) as { orderNo: string }).orderNo;
      return trafficMessage(
        envelope(
          { orderNo, finishedAt: new Date(finishedAt + i).toISOString() },
          ids.next(finishedAt + i),
          finishedAt + i,
          'FINISHED',
          orderNo,
        ),
        {
          label: 'order finished',
          atMs: i * 5,
        },
      );
    });
  const crashed = burst[9]!;
  const malformedAt = incidentAt + 1500;
  const malformedBody = '{"orderNo":"SO202007051422330001","userId":88373,"points":';

  const incident: TrafficMessage[] = [
    trafficMessage(firstCopy, { label: 'original delivery', atMs: 0 }),
    ...burst.map((m, i) =>
      i === 9 ? { ...m, label: 'ordinary order; its consumer crashes after the commit, before the ack' } : m,
    ),
    trafficMessage(envelope(malformedBody, ids.next(malformedAt), malformedAt), {
      label: 'malformed body (truncated JSON from a producer bug)',
      atMs: 1500,
    }),
    trafficMessage(firstCopy, { label: 'same message again, same msgId, 2.4 s later (bridge redelivery)', atMs: 2400 }),
    trafficMessage(envelope(incidentBody, resend, incidentAt + 3000, 'PAID', INCIDENT_ORDER.orderNo), {
      label: 'application re-send after a timeout: new msgId, same order',
      atMs: 2600,
    }),
  ];
  const replayed = burst.slice(20, 45).map((m) => ({
    ...m,
    label: 'rebalance replay: offsets reset, already processed',
    atMs: 0,
    groups: [POINTS_GROUP],
  }));
  return {
    title: `Incident replay: order ${INCIDENT_ORDER.orderNo} of user ${INCIDENT_ORDER.userId} (${INCIDENT_ORDER.points} points)`,
    phases: [
      { name: 'incident and burst', messages: incident },
      { name: 'orders finish', messages: finished, afterQuiet: true },
      { name: 'rebalance of the points group', messages: replayed, afterQuiet: true },
    ],
    crashes: [{ group: POINTS_GROUP, msgId: crashed.msgId! }],
    focusOrderNo: INCIDENT_ORDER.orderNo,
  };
}
