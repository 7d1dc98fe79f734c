import { scanTable } from '../../lib/aws/table-scan.ts';
import { randomUUID } from 'node:crypto';
import { ChangeMessageVisibilityBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, createSqs, emulatorConfig } from '../../lib/aws/clients.ts';
import { CONSUMER_GROUPS } from '../../lib/config/resources.ts';
import { DEAD_LETTER_ATTRIBUTES } from '../../lib/idempotency/failure-router.ts';
import { ConsumerPool, InvocationReports, SimulatedCrashError, type EventSourceSettings, type InvocationFault } from './consumer-pool.ts';
import { DeliveryAccount } from './delivery-account.ts';
import { startEmulator, type Emulator } from '../emulator/emulator.ts';
import type { CrashAfterCommit } from './incident-scenario.ts';
import { LOCAL_CONSUMERS, registrationOf, type LocalConsumerDeps } from './local-consumers.ts';
import type { ConsumerHandler } from '../../lib/consumer/consumer-handler.ts';
import { LocalCouponService } from './local-coupon-service.ts';
import { provisionLocal, type LocalResources } from './provision.ts';
import { QueueOccupancy } from './queue-occupancy.ts';
import { seededRandom } from './seeded-random.ts';
import { compressedRetrySchedule } from './time-scale.ts';
import { orderNumbersIn, type TrafficMessage, type TrafficPhase } from './traffic.ts';

export class LocalRunConfigError extends Error {
  override readonly name = 'LocalRunConfigError';
}

export interface LocalPipelineOptions {
  phases: readonly TrafficPhase[];
  /** Consumer groups to run. Default: every group with a local registration. */
  groups?: readonly string[];
  /** Concurrent pollers per group, like the event source's maximum concurrency. Default 2. */
  consumers?: number;
  /** Records per invocation. Default 10 (Lambda's default for standard queues). */
  batchSize?: number;
  /** How long a poller gathers a batch. Default 0 (Lambda's default). */
  batchingWindowMs?: number;
  /** RocketMQ retry delays are divided by this. Default 600. */
  timeScale?: number;
  /**
   * The local source queues' visibility timeout, and the function timeout (Lambda wants
   * visibility >= timeout). Default 5 s: a crashed batch is back within seconds, and the
   * coupon consumer still has time for its call after keeping 2 s back for its completion.
   */
  visibilityTimeoutSeconds?: number;
  /** Each (group, message) copy is delivered a second time with this probability. Default 0. */
  redeliverProbability?: number;
  seed?: number;
  /** Injected crashes after commit, before ack. */
  crashes?: readonly CrashAfterCommit[];
  /**
   * Builds a group's handler instead of `registration.create(deps)`: the chaos run uses it
   * to hand the factory a fault-injected client and to wrap the handler with crash injectors.
   */
  buildConsumer?: (group: string, deps: LocalConsumerDeps, create: (deps: LocalConsumerDeps) => ConsumerHandler) => ConsumerHandler;
  /** Use a running emulator instead of starting one. */
  endpoint?: string;
  /** Resource name prefix. Default `local-<random>`. */
  prefix?: string;
  /** Give up waiting for the queues to drain after this long. Default: `defaultMaxRunMs` of the traffic. */
  maxRunMs?: number;
  /**
   * Most messages the bridge lets wait in one source queue before it pauses (the rest wait
   * "in RocketMQ", as a real bridge only receives as fast as it forwards). Default 300: the
   * emulator's ReceiveMessage still walks the queue, so its cost grows with the backlog.
   * Counted by the run itself (`QueueOccupancy`), not asked of SQS.
   */
  maxQueueBacklog?: number;
  onProgress?: (progress: RunProgress) => void;
}

export interface RunProgress {
  readonly elapsedMs: number;
  readonly phase: string;
  readonly enqueued: number;
  readonly toEnqueue: number;
  /** Messages in the source queues, visible or not (waiting for a retry, being handled), as the run counts them. */
  readonly inQueues: number;
  readonly delivered: number;
  readonly processed: number;
}

export interface BridgeAccount {
  /** Copies put on source queues, per group (redeliveries included). */
  enqueued: Record<string, number>;
  /** Extra copies the bridge delivered (`--redeliver`). */
  redelivered: Record<string, number>;
  /** Messages whose topic no selected group subscribes to. */
  unrouted: number;
  /** msgIds of which the bridge injected an extra copy. */
  redeliveredMsgIds: Set<string>;
  /** Copies SQS refused (too large, characters SQS does not allow). */
  rejected: Array<{ group: string; line?: number; msgId?: string; reason: string }>;
}

export interface DeadLetter {
  readonly group: string;
  readonly body: string;
  readonly attributes: Record<string, string>;
}

export interface LocalRunResult {
  readonly endpoint: string;
  readonly resources: LocalResources;
  readonly groups: readonly string[];
  /** Catalogue groups that have no local registration yet. */
  readonly unavailableGroups: readonly string[];
  readonly settings: EventSourceSettings & { timeScale: number; visibilityTimeoutSeconds: number; redeliverProbability: number; seed: number };
  readonly account: DeliveryAccount;
  readonly bridge: BridgeAccount;
  /** Every message found in the groups' DLQs at the end (including any SQS redrive moved there). */
  readonly deadLetters: readonly DeadLetter[];
  readonly ledger: ReadonlyArray<{ userId: string; entryId: string; points: number; msgId?: string; orderNo?: string }>;
  readonly balances: Readonly<Record<string, number>>;
  /** Messages still in source queues when the run stopped (non-zero only if it gave up): in flight, waiting for a retry, or not yet received. */
  readonly leftInQueues: number;
  /** Traffic messages the bridge never sent because the run gave up first (a later phase never started). */
  readonly neverSent: number;
  /** Messages the run's own account still counted when SQS showed every source queue empty (should be 0; see waitForQuiet). */
  readonly untrackedDepartures: number;
  /**
   * Copies whose fate the run could not see because it stopped first: never sent, or still in
   * a source queue. Empty when the run completed. A checker must not call these lost.
   */
  readonly unsettled: ReadonlyArray<{ readonly group: string; readonly body: string }>;
  /** Every message was sent and every source queue drained before the time limit. */
  readonly completed: boolean;
  readonly wallMs: number;
  readonly pollErrors: number;
  readonly couponGrants?: number;
  /** Orders created as WAIT_PAY before the traffic, standing in for the order service. */
  readonly seededOrders: number;
}

/** A finished run whose emulator may still be running (`close()` stops what the run started). */
export interface LocalRun {
  readonly result: LocalRunResult;
  close(): Promise<void>;
}

const SOURCE_COUNTS = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] as const;

/**
 * The default time limit of a run: 10 minutes, plus 50 ms for every copy the bridge will
 * put on a queue (a message times the groups it goes to): 15 min for a 3,000-message chaos
 * run, which drains in about 3 min on a shared 2-core machine. The margin is for slower
 * machines and heavier fault plans; a fixed limit cut large runs short while they were still
 * making progress, and then reported what they had not sent yet.
 */
export function defaultMaxRunMs(copies: number): number {
  return 600_000 + 50 * copies;
}

/**
 * The whole local path: emulator → the CDK app's resources → bridge (each envelope to
 * every subscribed group's queue) → Lambda-like pollers → the real handlers → DynamoDB,
 * then the account of what happened and what the tables hold.
 */
export async function runLocalPipeline(options: LocalPipelineOptions): Promise<LocalRun> {
  const started = Date.now();
  const groups = selectGroups(options.groups);
  const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 5;
  const settings = {
    concurrency: options.consumers ?? 2,
    batchSize: options.batchSize ?? 10,
    batchingWindowMs: options.batchingWindowMs ?? 0,
    timeoutMs: visibilityTimeoutSeconds * 1000,
    timeScale: options.timeScale ?? 600,
    visibilityTimeoutSeconds,
    redeliverProbability: options.redeliverProbability ?? 0,
    seed: options.seed ?? 1,
  };
  validate(settings);
  const schedule = compressedRetrySchedule(settings.timeScale);

  const cleanups: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };
  try {
    let emulator: Emulator | undefined;
    if (!options.endpoint) {
      emulator = await startEmulator();
      cleanups.push(() => emulator!.stop());
    }
    const endpoint = options.endpoint ?? emulator!.endpoint;
    const aws = emulatorConfig(endpoint);
    const resources = await provisionLocal(endpoint, options.prefix ?? `local-${randomUUID().slice(0, 8)}`, { groups, visibilityTimeoutSeconds });
    const registrations = groups.map((g) => registrationOf(g)!);
    let coupons: LocalCouponService | undefined;
    if (registrations.some((r) => r.usesCouponService)) {
      coupons = await LocalCouponService.start();
      cleanups.push(() => coupons!.stop());
    }

    const sqs = createSqs(aws);
    const dynamoDb = createDynamoDb(aws);
    // The order service creates each order before it is paid; it is not part of this run,
    // so its rows are written here, or the status consumer would wait for them forever.
    const seededOrders = registrations.some((r) => r.needsOrders) ? await seedOrders(dynamoDb, resources.tables.orders, orderNumbersIn(options.phases)) : 0;
    const account = new DeliveryAccount(groups);
    const occupancy = new QueueOccupancy(Object.fromEntries(groups.map((g) => [g, resources.queues[g]!.maxReceiveCount])));
    const reports = new InvocationReports();
    const fault = crashFault(options.crashes ?? []);
    let pollErrors = 0;
    const pools = registrations.map((r) => {
      const queues = resources.queues[r.group]!;
      const deps: LocalConsumerDeps = {
        aws,
        tables: resources.tables,
        deadLetterQueueUrl: queues.deadLetter.url,
        schedule,
        onReport: reports.onReport,
        couponServiceUrl: coupons?.url ?? '',
      };
      const handler = options.buildConsumer ? options.buildConsumer(r.group, deps, r.create) : r.create(deps);
      return new ConsumerPool({ ...settings, group: r.group, functionName: r.functionName, handler, sqs, queue: queues.source, reports, account, fault, occupancy, onPollError: () => pollErrors++ });
    });
    for (const pool of pools) pool.start();

    const toEnqueue = options.phases.reduce((n, p) => n + p.messages.length, 0);
    const deadline = started + (options.maxRunMs ?? defaultMaxRunMs(toEnqueue * groups.length));
    const bridge = new Bridge(sqs, resources, groups, settings.redeliverProbability, seededRandom(settings.seed), options.maxQueueBacklog ?? 300, occupancy, deadline);
    let phase = options.phases[0]?.name ?? '';
    const progress = () => {
      const total = account.total();
      options.onProgress?.({ elapsedMs: Date.now() - started, phase, enqueued: bridge.sent, toEnqueue, inQueues: occupancy.total(), delivered: total.delivered, processed: total.processed });
    };
    // Quiet is what the run's own account says (nothing in any queue, no invocation
    // running), confirmed by the queue attributes twice in a row: a message at the redrive
    // limit leaves only on a later receive, and stock moto computes each count separately,
    // so a message whose visibility ends between two of them is briefly counted nowhere.
    // Should the account ever keep counting messages SQS no longer holds, the queues seen
    // empty three times, a second apart, with no invocation running, are quiet too: the run
    // must never wait for a message that is gone.
    const waitForQuiet = async () => {
      let confirmations = 0;
      let emptyWhileCounted = 0;
      let lastLook = 0;
      while (Date.now() < deadline) {
        const idle = pools.every((p) => p.inFlight === 0);
        if (idle && occupancy.total() === 0) {
          confirmations = (await messagesInQueues(sqs, resources, groups)) === 0 ? confirmations + 1 : 0;
          if (confirmations >= 2) return true;
          await sleep(confirmations > 0 ? 20 : 200);
          continue;
        }
        confirmations = 0;
        if (idle && Date.now() - lastLook >= 1000) {
          lastLook = Date.now();
          emptyWhileCounted = (await messagesInQueues(sqs, resources, groups)) === 0 ? emptyWhileCounted + 1 : 0;
          if (emptyWhileCounted >= 3) {
            untracked += occupancy.reconcile();
            return true;
          }
        } else if (!idle) emptyWhileCounted = 0;
        await sleep(20);
      }
      return false;
    };
    let untracked = 0;
    const ticker = setInterval(progress, 500);
    let completed = true;
    try {
      for (const [i, p] of options.phases.entries()) {
        if (p.afterQuiet && !(await waitForQuiet())) {
          completed = false;
          bridge.skip(options.phases.slice(i).flatMap((q) => q.messages));
          break;
        }
        phase = p.name;
        if (!(await bridge.send(p.messages))) {
          completed = false;
          bridge.skip(options.phases.slice(i + 1).flatMap((q) => q.messages));
          break;
        }
      }
      if (completed) completed = await waitForQuiet();
    } finally {
      clearInterval(ticker);
      await Promise.all(pools.map((p) => p.stop()));
    }
    const leftInQueues = await messagesInQueues(sqs, resources, groups);
    const { ledger, balances } = await readPoints(dynamoDb, resources);
    const deadLetters = await readDeadLetters(sqs, resources, groups);
    sqs.destroy();
    const result: LocalRunResult = {
      endpoint,
      resources,
      groups,
      unavailableGroups: CONSUMER_GROUPS.map((g) => g.group).filter((g) => !registrationOf(g)),
      settings,
      account,
      bridge: bridge.account,
      deadLetters,
      ledger,
      balances,
      leftInQueues,
      neverSent: toEnqueue - bridge.sent,
      untrackedDepartures: untracked,
      unsettled: [...bridge.unsent, ...groups.flatMap((group) => occupancy.bodiesIn(group).map((body) => ({ group, body })))],
      completed: completed && leftInQueues === 0 && bridge.sent === toEnqueue,
      wallMs: Date.now() - started,
      pollErrors,
      seededOrders,
      ...(coupons ? { couponGrants: coupons.grants.size } : {}),
    };
    return { result, close };
  } catch (error) {
    await close();
    throw error;
  }
}

function selectGroups(requested: readonly string[] | undefined): string[] {
  const known = CONSUMER_GROUPS.map((g) => g.group as string);
  if (!requested) return LOCAL_CONSUMERS.map((r) => r.group);
  if (requested.length === 0) throw new LocalRunConfigError('no consumer group selected');
  for (const g of requested) {
    if (!known.includes(g)) throw new LocalRunConfigError(`unknown consumer group "${g}"; the catalogue has: ${known.join(', ')}`);
    if (!registrationOf(g)) throw new LocalRunConfigError(`consumer group "${g}" has no local registration yet (its handler factory is not in scripts/local/local-consumers.ts)`);
  }
  return [...new Set(requested)];
}

function validate(s: { concurrency: number; batchSize: number; batchingWindowMs: number; visibilityTimeoutSeconds: number; redeliverProbability: number; seed: number }) {
  const check = (ok: boolean, what: string) => {
    if (!ok) throw new LocalRunConfigError(what);
  };
  check(Number.isInteger(s.concurrency) && s.concurrency >= 1 && s.concurrency <= 1000, `consumers must be an integer from 1 to 1000, got ${s.concurrency}`);
  check(Number.isInteger(s.batchSize) && s.batchSize >= 1 && s.batchSize <= 10_000, `batch size must be an integer from 1 to 10000, got ${s.batchSize}`);
  check(s.batchSize <= 10 || s.batchingWindowMs > 0, 'a batch size above 10 needs a batching window, as on Lambda');
  check(Number.isFinite(s.batchingWindowMs) && s.batchingWindowMs >= 0 && s.batchingWindowMs <= 300_000, `batching window must be 0 to 300000 ms, got ${s.batchingWindowMs}`);
  check(Number.isInteger(s.visibilityTimeoutSeconds) && s.visibilityTimeoutSeconds >= 1 && s.visibilityTimeoutSeconds <= 43_200, `visibility timeout must be an integer from 1 to 43200 s, got ${s.visibilityTimeoutSeconds}`);
  check(Number.isFinite(s.redeliverProbability) && s.redeliverProbability >= 0 && s.redeliverProbability <= 1, `redeliver probability must be between 0 and 1, got ${s.redeliverProbability}`);
  check(Number.isInteger(s.seed), `seed must be an integer, got ${s.seed}`);
}

/** The crash the scenario injects, once per target: after the real handler committed, before Lambda could delete the batch. */
function crashFault(crashes: readonly CrashAfterCommit[]): InvocationFault | undefined {
  if (crashes.length === 0) return undefined;
  const pending = new Set(crashes.map((c) => `${c.group}\u0000${c.msgId.toUpperCase()}`));
  return (group, reports) => {
    for (const r of reports) {
      const id = `${group}\u0000${r.msgId ?? ''}`;
      if (r.settlement.outcome === 'processed' && pending.delete(id)) {
        throw new SimulatedCrashError(`simulated crash after committing ${r.msgId}, before the batch was acknowledged`);
      }
    }
  };
}

/**
 * The RocketMQ → SQS bridge of the local run. Clustering model: every consumer group
 * subscribed to a topic gets its own copy. A body that is not an envelope goes to every
 * selected group, as a bridge that cannot read the topic would forward it.
 */
class Bridge {
  sent = 0;
  /** Copies never put on a queue because the run stopped first. */
  readonly unsent: Array<{ group: string; body: string }> = [];
  readonly account: BridgeAccount;
  private readonly topics: Map<string, string[]>;

  constructor(
    private readonly sqs: SQSClient,
    private readonly resources: LocalResources,
    private readonly groups: readonly string[],
    private readonly redeliverProbability: number,
    private readonly random: () => number,
    private readonly maxQueueBacklog: number,
    private readonly occupancy: QueueOccupancy,
    private readonly deadline: number,
  ) {
    this.account = { enqueued: Object.fromEntries(groups.map((g) => [g, 0])), redelivered: Object.fromEntries(groups.map((g) => [g, 0])), unrouted: 0, rejected: [], redeliveredMsgIds: new Set() };
    this.topics = new Map();
    for (const def of CONSUMER_GROUPS) {
      if (groups.includes(def.group)) this.topics.set(def.topic, [...(this.topics.get(def.topic) ?? []), def.group]);
    }
  }

  /**
   * Sends the phase's messages in order, each at its `atMs`; redelivered copies follow a few
   * messages later. False if the run's deadline passed while the bridge waited for room.
   */
  async send(messages: readonly TrafficMessage[]): Promise<boolean> {
    const phaseStart = Date.now();
    const ordered = [...messages].map((m, i) => ({ m, i })).sort((a, b) => (a.m.atMs ?? 0) - (b.m.atMs ?? 0) || a.i - b.i).map((x) => x.m);
    const later = new Map<number, Array<{ group: string; message: TrafficMessage }>>();
    const buffers = new Map<string, TrafficMessage[]>();
    const flush = async (group?: string) => {
      for (const [g, buffer] of buffers) {
        if (group && g !== group) continue;
        if (buffer.length > 0) await this.enqueue(g, buffer.splice(0));
      }
    };
    const add = async (group: string, message: TrafficMessage) => {
      const buffer = buffers.get(group) ?? [];
      buffers.set(group, buffer);
      buffer.push(message);
      if (buffer.length === 10 || buffer.reduce((n, b) => n + b.body.length, 0) > 200_000) await flush(group);
    };
    for (let i = 0; i < ordered.length; i++) {
      if (Date.now() >= this.deadline) {
        await flush();
        this.skip(ordered.slice(i));
        for (const copies of later.values()) for (const copy of copies) this.unsent.push({ group: copy.group, body: copy.message.body });
        return false;
      }
      const message = ordered[i]!;
      const wait = phaseStart + (message.atMs ?? 0) - Date.now();
      if (wait > 0) {
        await flush();
        await sleep(wait);
      }
      const targets = this.targetsOf(message);
      if (targets.length === 0) this.account.unrouted++;
      for (const group of targets) {
        await add(group, message);
        if (this.redeliverProbability > 0 && this.random() < this.redeliverProbability) {
          const at = i + 1 + Math.floor(this.random() * 20);
          later.set(at, [...(later.get(at) ?? []), { group, message: { ...message, label: 'bridge redelivery (same msgId)' } }]);
          this.account.redelivered[group]!++;
          if (message.msgId) this.account.redeliveredMsgIds.add(message.msgId);
        }
      }
      for (const copy of later.get(i) ?? []) await add(copy.group, copy.message);
      later.delete(i);
      this.sent++;
    }
    for (const copies of later.values()) for (const copy of copies) await add(copy.group, copy.message);
    await flush();
    return true;
  }

  /** Records messages the run will not send (it gave up before their phase). */
  skip(messages: readonly TrafficMessage[]): void {
    for (const message of messages) for (const group of this.targetsOf(message)) this.unsent.push({ group, body: message.body });
  }

  private targetsOf(message: TrafficMessage): string[] {
    const subscribed = message.topic === undefined ? [...this.groups] : (this.topics.get(message.topic) ?? []);
    return message.groups ? subscribed.filter((g) => message.groups!.includes(g)) : subscribed;
  }

  private async enqueue(group: string, messages: TrafficMessage[]) {
    // Past the deadline the run stops anyway; the copies still go out, so `sent` stays true to what SQS holds.
    while (this.occupancy.inQueue(group) >= this.maxQueueBacklog && Date.now() < this.deadline) await sleep(5);
    const { Successful = [], Failed = [] } = await this.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: this.resources.queues[group]!.source.url,
        Entries: messages.map((m, i) => ({ Id: String(i), MessageBody: m.body })),
      }),
    );
    for (const f of Failed) {
      const m = messages[Number(f.Id)]!;
      this.account.rejected.push({ group, line: m.line, msgId: m.msgId, reason: `${f.Code ?? 'error'}: ${f.Message ?? 'SQS refused the message'}` });
    }
    this.occupancy.sent(group, Successful.map((s) => ({ messageId: s.MessageId!, body: messages[Number(s.Id)]!.body })));
    this.account.enqueued[group]! += messages.length - Failed.length;
  }
}

async function messagesInQueues(sqs: SQSClient, resources: LocalResources, groups: readonly string[]): Promise<number> {
  let total = 0;
  for (const g of groups) {
    const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: resources.queues[g]!.source.url, AttributeNames: [...SOURCE_COUNTS] }));
    for (const name of SOURCE_COUNTS) total += Number(Attributes[name] ?? 0);
  }
  return total;
}

async function seedOrders(dynamoDb: DynamoDBDocumentClient, table: string, orderNos: readonly string[]): Promise<number> {
  const createdAt = new Date().toISOString();
  for (let i = 0; i < orderNos.length; i += 25) {
    let items: Record<string, unknown[]> | undefined = {
      [table]: orderNos.slice(i, i + 25).map((orderNo) => ({ PutRequest: { Item: { orderNo, status: 'WAIT_PAY', createdAt } } })),
    };
    while (items && Object.keys(items).length > 0) {
      const { UnprocessedItems } = await dynamoDb.send(new BatchWriteCommand({ RequestItems: items as never }));
      items = UnprocessedItems as typeof items;
    }
  }
  return orderNos.length;
}

async function readPoints(dynamoDb: DynamoDBDocumentClient, resources: LocalResources) {
  const ledger = (await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.ledger)).map((e) => ({
    userId: String(e.userId),
    entryId: String(e.entryId),
    points: Number(e.points),
    msgId: e.msgId as string | undefined,
    orderNo: e.orderNo as string | undefined,
  }));
  const balances: Record<string, number> = {};
  for (const a of await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.accounts)) balances[String(a.userId)] = Number(a.balance ?? 0);
  return { ledger, balances };
}

/**
 * Reads every dead letter, then makes them visible again at once, so a kept emulator
 * still shows them to `ops dlq` and the AWS CLI.
 */
async function readDeadLetters(sqs: SQSClient, resources: LocalResources, groups: readonly string[]): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  for (const group of groups) {
    const url = resources.queues[group]!.deadLetter.url;
    const handles: string[] = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], VisibilityTimeout: 60 }));
      if (Messages.length === 0) break;
      for (const m of Messages) {
        handles.push(m.ReceiptHandle!);
        out.push({ group, body: m.Body ?? '', attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? ''])) });
      }
    }
    for (let i = 0; i < handles.length; i += 10) {
      await sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: handles.slice(i, i + 10).map((h, j) => ({ Id: String(j), ReceiptHandle: h, VisibilityTimeout: 0 })) }));
    }
  }
  return out;
}

export { DEAD_LETTER_ATTRIBUTES };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
