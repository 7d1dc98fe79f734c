import { randomUUID } from 'node:crypto';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  type AwsConfig,
  createCloudWatchLogs,
  createDynamoDb,
  createSqs,
  emulatorConfig,
} from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  FIFO_MAX_BATCH_SIZE,
  functionLogGroupName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import type { ConsumerHandler } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { type Emulator, startEmulator } from '../emulator/emulator.ts';
import { type CaptureTimes, withCaptureTimes } from './capture-times.ts';
import { ConsumerPool, crashAfterCommitFault, type EventSourceSettings, InvocationReports } from './consumer-pool.ts';
import { DeliveryAccount } from './delivery-account.ts';
import { FunctionLogShipper, lambdaLogStreamName, ShippingLogger } from './function-log-shipping.ts';
import type { CrashAfterCommit } from './incident-scenario.ts';
import { type BridgeAccount, LocalBridge } from './local-bridge.ts';
import { type ConsumerRegistration, type LocalConsumerDeps, loadRegistrations } from './local-consumers.ts';
import { LocalCouponService } from './local-coupon-service.ts';
import { LocalNotificationService } from './local-notification-service.ts';
import { LocalRelays, type LocalRelaysOptions, type OutboxReadout, readOutbox } from './local-relays.ts';
import { LocalSigningKey } from './local-signing-key.ts';
import { seedOrders } from './order-seeding.ts';
import { type LocalResources, provisionLocal } from './provision.ts';
import { QueueOccupancy } from './queue-occupancy.ts';
import { QuietDetector } from './quiet-detection.ts';
import { type DeadLetter, messagesInQueues, readDeadLetters, readPoints } from './run-readout.ts';
import { defaultMaxRunMs, type RunSettings, selectGroups, validateSettings } from './run-settings.ts';
import { seededRandom } from './seeded-random.ts';
import { compressedScheduleOf } from './time-scale.ts';
import { orderNumbersIn, type TrafficPhase } from './traffic.ts';

export { LocalRunConfigError } from './run-settings.ts';
export type { BridgeAccount, DeadLetter, OutboxReadout };

export interface LocalPipelineOptions {
  phases: readonly TrafficPhase[];
  /**
   * The consumer groups that exist (default `CONSUMER_GROUPS`): provisioning, the bridge's
   * routes and the registrations all read it, so a test can add a group without editing
   * the product, as it does for the CDK app.
   */
  catalogue?: readonly ConsumerGroupDefinition[];
  /** Consumer groups to run. Default: every group of the catalogue. */
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
  buildConsumer?: (
    group: string,
    deps: LocalConsumerDeps,
    create: (deps: LocalConsumerDeps) => ConsumerHandler,
  ) => ConsumerHandler;
  /** Puts faults between a publishing group's relay and AWS (the chaos run's kills and throttles). */
  relayFaults?: LocalRelaysOptions['faults'];
  /**
   * Writes what the groups act on before any traffic, instead of the default (every order
   * of the traffic as WAIT_PAY when a group uses the orders table): the chaos run's plug-ins
   * seed their own. Returns how many items it wrote.
   */
  seedTables?: (dynamoDb: DynamoDBDocumentClient, tables: LocalResources['tables']) => Promise<number>;
  /**
   * A replay of captured traffic: `rebased` moves every envelope's store and born times so the
   * capture's latest is the moment the replay begins, `as-captured` keeps them (`CaptureTimes`).
   * Default: the traffic is sent as given, and the result says nothing of its times.
   */
  captureTimes?: CaptureTimes['mode'];
  /** Use a running emulator instead of starting one. */
  endpoint?: string;
  /**
   * The emulator the run starts puts DynamoDB in a process of its own (default true), so SQS
   * and DynamoDB are served on both cores; false keeps one endpoint for everything, simpler to
   * inspect (`--keep`).
   */
  separateDynamoDb?: boolean;
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
  /**
   * Ships every consumer's JSON log lines to the emulator's CloudWatch Logs, in the log group Lambda
   * would write them to (`/aws/lambda/<prefix>-<functionName>`), from `logLevel` up; `echo` prints them too.
   */
  functionLogs?: { logLevel: LogLevel; echo: boolean };
  /**
   * The envelope signing key the run's bridge signs with and its consumers verify with. Default: one
   * generated when the run starts. The chaos run passes the one it signed its workload with, so the
   * bodies it judges are the ones on the queues.
   */
  signing?: LocalSigningKey;
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

export interface LocalRunResult {
  readonly endpoint: string;
  readonly resources: LocalResources;
  readonly groups: readonly string[];
  readonly settings: EventSourceSettings & {
    timeScale: number;
    visibilityTimeoutSeconds: number;
    redeliverProbability: number;
    seed: number;
  };
  readonly account: DeliveryAccount;
  readonly bridge: BridgeAccount;
  /** Every message found in the groups' DLQs at the end (including any SQS redrive moved there). */
  readonly deadLetters: readonly DeadLetter[];
  readonly ledger: ReadonlyArray<{ userId: string; entryId: string; points: number; msgId?: string; orderNo?: string }>;
  readonly balances: Readonly<Record<string, number>>;
  /**
   * Messages still in source queues when the run stopped (non-zero only if it gave up): in flight, waiting for a retry,
   * or not yet received.
   */
  readonly leftInQueues: number;
  /** Traffic messages the bridge never sent because the run gave up first (a later phase never started). */
  readonly neverSent: number;
  /**
   * Messages the run's own account still counted when SQS showed every source queue empty (should be 0; see
   * waitForQuiet).
   */
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
  /**
   * With the notification group: notifications the stand-in sent, awards it was asked to tell twice, and the
   * event ids it sent one for.
   */
  readonly notifications?: {
    readonly sent: number;
    readonly doubleNotifications: number;
    readonly eventIds: readonly string[];
  };
  /** With a running group that publishes: its outbox items at the end, and what its relay did. */
  readonly outbox?: OutboxReadout;
  /** Items written before the traffic (by default orders as WAIT_PAY, standing in for the order service). */
  readonly seededOrders: number;
  /** With `functionLogs`: what shipping the log lines cost. */
  readonly logShipping?: LogShippingAccount;
  /** With `captureTimes`: how the capture's times were sent. */
  readonly captureTimes?: CaptureTimes;
}

export interface LogShippingAccount {
  readonly logGroups: string[];
  readonly lines: number;
  readonly calls: number;
  /** Time spent in PutLogEvents calls, beside the consumers (they never wait for it). */
  readonly putMs: number;
  /** The last flush after the queues drained: the only shipping time the run waits for. */
  readonly finalFlushMs: number;
  /** Batches refused by the emulator (retried at the next flush). */
  readonly refusedBatches: number;
}

/** A finished run whose emulator may still be running (`close()` stops what the run started). */
export interface LocalRun {
  readonly result: LocalRunResult;
  close(): Promise<void>;
}

/**
 * The whole local path: emulator → the CDK app's resources → bridge (each envelope signed
 * with a key the run generates, to every subscribed group's queue) → Lambda-like pollers → the real handlers → DynamoDB,
 * then the account of what happened and what the tables hold.
 */
export async function runLocalPipeline(options: LocalPipelineOptions): Promise<LocalRun> {
  const started = Date.now();
  const catalogue = options.catalogue ?? CONSUMER_GROUPS;
  const definitions = selectGroups(catalogue, options.groups);
  const registrations = await loadRegistrations(definitions);
  const settings = runSettingsOf(options);
  validateSettings(settings);

  const cleanups: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };
  try {
    const stage = await openStage(options, { catalogue, registrations, settings }, cleanups);
    const consumers = await startConsumers(options, stage, registrations, settings);
    const times = options.captureTimes && withCaptureTimes(options.phases, options.captureTimes, Date.now());
    const phases = times?.phases ?? options.phases;
    const traffic = await replayTraffic(options, phases, { stage, consumers, definitions, settings, started });
    const result = await readOutcome(options, { stage, consumers, traffic, settings, started });
    return { result: times ? { ...result, captureTimes: times.captureTimes } : result, close };
  } catch (error) {
    await close();
    throw error;
  }
}

function runSettingsOf(options: LocalPipelineOptions): RunSettings {
  const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 5;
  return {
    concurrency: options.consumers ?? 2,
    batchSize: options.batchSize ?? 10,
    batchingWindowMs: options.batchingWindowMs ?? 0,
    timeoutMs: visibilityTimeoutSeconds * 1000,
    timeScale: options.timeScale ?? 600,
    visibilityTimeoutSeconds,
    redeliverProbability: options.redeliverProbability ?? 0,
    seed: options.seed ?? 1,
  };
}

/** What the run stands on: the emulator, the stage's tables and queues, and the services its groups call. */
interface Stage {
  readonly endpoint: string;
  readonly aws: AwsConfig;
  readonly resources: LocalResources;
  readonly groups: readonly string[];
  readonly sqs: SQSClient;
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly coupons?: LocalCouponService;
  readonly notifications?: LocalNotificationService;
  readonly seededOrders: number;
}

async function openStage(
  options: LocalPipelineOptions,
  run: {
    catalogue: readonly ConsumerGroupDefinition[];
    registrations: readonly ConsumerRegistration[];
    settings: RunSettings;
  },
  cleanups: Array<() => Promise<void>>,
): Promise<Stage> {
  const groups = run.registrations.map((r) => r.definition.group);
  let emulator: Emulator | undefined;
  if (!options.endpoint) {
    emulator = await startEmulator({ separateDynamoDb: options.separateDynamoDb ?? true });
    cleanups.push(() => emulator!.stop());
  }
  const endpoint = options.endpoint ?? emulator!.endpoint;
  const aws = emulatorConfig(endpoint, emulator?.dynamoDbEndpoint);
  const resources = await provisionLocal(aws, options.prefix ?? `local-${randomUUID().slice(0, 8)}`, {
    catalogue: run.catalogue,
    groups,
    visibilityTimeoutSeconds: run.settings.visibilityTimeoutSeconds,
  });
  let coupons: LocalCouponService | undefined;
  if (run.registrations.some((r) => r.usesCouponService)) {
    coupons = await LocalCouponService.start();
    cleanups.push(() => coupons!.stop());
  }
  let notifications: LocalNotificationService | undefined;
  if (run.registrations.some((r) => r.usesNotificationService)) {
    notifications = await LocalNotificationService.start();
    cleanups.push(() => notifications!.stop());
  }
  const sqs = createSqs(aws);
  const dynamoDb = createDynamoDb(aws);
  const seededOrders = options.seedTables
    ? await options.seedTables(dynamoDb, resources.tables)
    : run.registrations.some((r) => r.needsOrders)
      ? await seedOrders(dynamoDb, resources.tables.orders, orderNumbersIn(options.phases))
      : 0;
  return {
    endpoint,
    aws,
    resources,
    groups,
    sqs,
    dynamoDb,
    ...(coupons ? { coupons } : {}),
    ...(notifications ? { notifications } : {}),
    seededOrders,
  };
}

/** The groups' pollers, running, and what they account for. */
interface Consumers {
  readonly pools: readonly ConsumerPool[];
  readonly shippers: ReadonlyMap<string, FunctionLogShipper>;
  readonly account: DeliveryAccount;
  readonly occupancy: QueueOccupancy;
  /** The run's own envelope signing key, made at its start: its bridge signs, its consumers verify. */
  readonly signing: LocalSigningKey;
  readonly pollErrors: () => number;
  /** The relays of the running groups that publish (none when no running group does). */
  readonly relays?: LocalRelays;
}

async function startConsumers(
  options: LocalPipelineOptions,
  stage: Stage,
  registrations: readonly ConsumerRegistration[],
  settings: RunSettings,
): Promise<Consumers> {
  const { resources, groups } = stage;
  const account = new DeliveryAccount(groups);
  const occupancy = new QueueOccupancy(
    Object.fromEntries(groups.map((g) => [g, resources.queues[g]!.maxReceiveCount])),
  );
  const reports = new InvocationReports();
  const fault = crashAfterCommitFault(options.crashes ?? []);
  const signing = options.signing ?? new LocalSigningKey();
  let pollErrors = 0;
  const shippers = await openLogShippers(options, stage, registrations);
  const pools = registrations.map((r) => {
    const { group, functionName } = r.definition;
    const queues = resources.queues[group]!;
    const deps: LocalConsumerDeps = {
      aws: stage.aws,
      tables: resources.tables,
      outboxTable: resources.outboxTables[group],
      deadLetterQueueUrl: queues.deadLetter.url,
      schedule: compressedScheduleOf(r.definition, settings.timeScale),
      envelopeKeys: signing.ring,
      onReport: reports.onReport,
      couponServiceUrl: stage.coupons?.url ?? '',
      notificationServiceUrl: stage.notifications?.url ?? '',
      services: { 'coupon-service': stage.coupons?.url ?? '', 'notification-service': stage.notifications?.url ?? '' },
      ...(options.functionLogs && shippers.has(group)
        ? {
            logger: ShippingLogger.create(shippers.get(group)!.push, {
              serviceName: group,
              logLevel: options.functionLogs.logLevel,
              echo: options.functionLogs.echo,
            }),
          }
        : {}),
    };
    const handler = options.buildConsumer ? options.buildConsumer(group, deps, r.create) : r.create(deps);
    // Lambda reads at most 10 records a batch from a FIFO queue and allows no batching window there.
    const eventSource = queues.fifo
      ? { batchSize: Math.min(settings.batchSize, FIFO_MAX_BATCH_SIZE), batchingWindowMs: 0 }
      : {};
    return new ConsumerPool({
      ...settings,
      ...eventSource,
      group,
      functionName,
      handler,
      sqs: stage.sqs,
      queue: queues.source,
      reports,
      account,
      fault,
      occupancy,
      onPollError: () => pollErrors++,
    });
  });
  for (const pool of pools) pool.start();
  const relays = await startRelays(options, stage, registrations, { occupancy, signing });
  return { pools, shippers, account, occupancy, signing, pollErrors: () => pollErrors, ...(relays ? { relays } : {}) };
}

/** The relay of every running group that publishes, on its outbox table's stream, sending to the run's queues. */
async function startRelays(
  options: LocalPipelineOptions,
  stage: Stage,
  registrations: readonly ConsumerRegistration[],
  run: { occupancy: QueueOccupancy; signing: LocalSigningKey },
): Promise<LocalRelays | undefined> {
  const publishers = registrations.map((r) => r.definition).filter((d) => (d.publishes ?? []).length > 0);
  if (publishers.length === 0) return undefined;
  return LocalRelays.start({
    aws: stage.aws,
    resources: stage.resources,
    catalogue: options.catalogue ?? CONSUMER_GROUPS,
    publishers,
    groups: stage.groups,
    occupancy: run.occupancy,
    signingKeys: run.signing.ring,
    ...(options.relayFaults ? { faults: options.relayFaults } : {}),
  });
}

/** With `functionLogs`: one shipper per function, each writing one log stream as a Lambda instance would. */
async function openLogShippers(
  options: LocalPipelineOptions,
  stage: Stage,
  registrations: readonly ConsumerRegistration[],
): Promise<Map<string, FunctionLogShipper>> {
  const shippers = new Map<string, FunctionLogShipper>();
  if (!options.functionLogs) return shippers;
  const logs = createCloudWatchLogs(stage.aws);
  for (const { definition } of registrations) {
    const instance = randomUUID().replace(/-/g, '');
    const shipper = new FunctionLogShipper(
      logs,
      functionLogGroupName(stage.resources.prefix, definition.functionName),
      lambdaLogStreamName(new Date(), instance),
    );
    await shipper.open();
    shippers.set(definition.group, shipper);
  }
  return shippers;
}

/** How the traffic went: what the bridge did, and whether it all went out and drained before the deadline. */
interface TrafficOutcome {
  readonly bridge: LocalBridge;
  readonly quiet: QuietDetector;
  readonly toEnqueue: number;
  readonly completed: boolean;
}

/** Sends the phases through the bridge, each once the run is quiet if it asks to, then waits for quiet. */
async function replayTraffic(
  options: LocalPipelineOptions,
  phases: readonly TrafficPhase[],
  run: {
    stage: Stage;
    consumers: Consumers;
    definitions: readonly ConsumerGroupDefinition[];
    settings: RunSettings;
    started: number;
  },
): Promise<TrafficOutcome> {
  const { stage, consumers, settings, started } = run;
  const { pools, occupancy, account } = consumers;
  const toEnqueue = phases.reduce((n, p) => n + p.messages.length, 0);
  const deadline = started + (options.maxRunMs ?? defaultMaxRunMs(toEnqueue * stage.groups.length));
  const bridge = new LocalBridge(
    stage.sqs,
    stage.resources,
    run.definitions,
    settings.redeliverProbability,
    seededRandom(settings.seed),
    options.maxQueueBacklog ?? 300,
    occupancy,
    deadline,
    consumers.signing,
  );
  let phase = phases[0]?.name ?? '';
  const progress = () => {
    const total = account.total();
    options.onProgress?.({
      elapsedMs: Date.now() - started,
      phase,
      enqueued: bridge.sent,
      toEnqueue,
      inQueues: occupancy.total(),
      delivered: total.delivered,
      processed: total.processed,
    });
  };
  // The relays are caught up when a poll that started after the consumers fell idle found nothing new.
  let consumersIdleSince: number | undefined;
  const idle = () => {
    if (!pools.every((p) => p.inFlight === 0)) {
      consumersIdleSince = undefined;
      return false;
    }
    consumersIdleSince ??= Date.now();
    return consumers.relays?.caughtUpSince(consumersIdleSince) ?? true;
  };
  const quiet = new QuietDetector(
    idle,
    occupancy,
    () => messagesInQueues(stage.sqs, stage.resources, stage.groups),
    deadline,
  );
  const ticker = setInterval(progress, 500);
  let completed = true;
  try {
    for (const [i, p] of phases.entries()) {
      if (p.afterQuiet && !(await quiet.wait())) {
        completed = false;
        bridge.skip(phases.slice(i).flatMap((q) => q.messages));
        break;
      }
      phase = p.name;
      if (!(await bridge.send(p.messages))) {
        completed = false;
        bridge.skip(phases.slice(i + 1).flatMap((q) => q.messages));
        break;
      }
    }
    if (completed) completed = await quiet.wait();
  } finally {
    clearInterval(ticker);
    await consumers.relays?.stop();
    await Promise.all(pools.map((p) => p.stop()));
  }
  return { bridge, quiet, toEnqueue, completed };
}

/** The account of the run and what the tables and DLQs hold at its end. */
async function readOutcome(
  options: LocalPipelineOptions,
  run: { stage: Stage; consumers: Consumers; traffic: TrafficOutcome; settings: RunSettings; started: number },
): Promise<LocalRunResult> {
  const { stage, consumers, traffic } = run;
  const { sqs, resources, groups } = stage;
  const shippers = [...consumers.shippers.values()];
  const flushStarted = performance.now();
  await Promise.all(shippers.map((s) => s.close()));
  const finalFlushMs = performance.now() - flushStarted;
  const leftInQueues = await messagesInQueues(sqs, resources, groups);
  const { ledger, balances } = await readPoints(stage.dynamoDb, resources);
  const outbox = consumers.relays && (await readOutbox(stage.dynamoDb, resources, consumers.relays));
  const deadLetters = await readDeadLetters(sqs, resources, groups);
  sqs.destroy();
  const { bridge, toEnqueue } = traffic;
  return {
    endpoint: stage.endpoint,
    resources,
    groups,
    settings: run.settings,
    account: consumers.account,
    bridge: bridge.account,
    deadLetters,
    ledger,
    balances,
    leftInQueues,
    neverSent: toEnqueue - bridge.sent,
    untrackedDepartures: traffic.quiet.untrackedDepartures,
    unsettled: [
      ...bridge.unsent,
      ...groups.flatMap((group) => consumers.occupancy.bodiesIn(group).map((body) => ({ group, body }))),
    ],
    completed: traffic.completed && leftInQueues === 0 && bridge.sent === toEnqueue,
    wallMs: Date.now() - run.started,
    pollErrors: consumers.pollErrors(),
    seededOrders: stage.seededOrders,
    ...(stage.coupons ? { couponGrants: stage.coupons.grants.size } : {}),
    ...(stage.notifications
      ? {
          notifications: {
            sent: stage.notifications.sent.size,
            doubleNotifications: stage.notifications.doubleNotifications().length,
            eventIds: [...stage.notifications.sent.keys()],
          },
        }
      : {}),
    ...(options.functionLogs ? { logShipping: shippingAccountOf(shippers, finalFlushMs) } : {}),
    ...(outbox ? { outbox } : {}),
  };
}

function shippingAccountOf(shippers: readonly FunctionLogShipper[], finalFlushMs: number): LogShippingAccount {
  return {
    logGroups: shippers.map((s) => s.logGroupName),
    lines: shippers.reduce((n, s) => n + s.account.lines, 0),
    calls: shippers.reduce((n, s) => n + s.account.calls, 0),
    putMs: Math.round(shippers.reduce((n, s) => n + s.account.putMs, 0)),
    finalFlushMs: Math.round(finalFlushMs),
    refusedBatches: shippers.reduce((n, s) => n + s.failures, 0),
  };
}
