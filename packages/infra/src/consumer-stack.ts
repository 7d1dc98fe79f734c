import {
  BUS_ARCHIVE_RETENTION_SECONDS,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  type OutsideServiceName,
  REVOKED_STAGE_PREFIX,
  signingKeySecretName,
  TABLES,
  type TableKey,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { Annotations, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { AlarmRouting, type AlarmRoutingProps } from './alarm-routing.ts';
import { StageBridge } from './bridge/stage-bridge.ts';
import { type ConsumerTuning, RocketMQConsumerGroup, tuningOf } from './consumer-group.ts';
import { ConsumerDashboard } from './dashboard.ts';
import { StageDataKey } from './data-key.ts';
import type { BridgeStageSettings, VpcPlacement } from './deployment-settings.ts';
import { type StageTracing, xrayTracingNote } from './function-tracing.ts';
import { GroupOutbox } from './group-outbox.ts';
import type { ServiceSetting } from './outside-service.ts';
import { ProtectedSecret } from './protected-secret.ts';
import { guardBus, guardTable } from './resource-guards.ts';
import { restrictBusSenders } from './sender-policy.ts';
import { ConsumerTables } from './tables.ts';

export interface RocketMQConsumersStackProps
  extends StackProps,
    Omit<AlarmRoutingProps, 'prefix' | 'runbookUrl' | 'dataKey'> {
  /** Prefix of every physical name (tables, queues, alarms): one per deployment, e.g. `rmq-prod`. */
  readonly prefix: string;
  /** Groups to deploy (default: every entry of `CONSUMER_GROUPS`). */
  readonly groups?: readonly ConsumerGroupDefinition[];
  /** The outside services, by catalogue name: URL and authentication (`services` in the stage settings). */
  readonly services?: Partial<Record<OutsideServiceName, ServiceSetting>>;
  /** Sizing for every group (below each group's catalogue tuning), then per group by name (above it). */
  readonly tuning?: ConsumerTuning;
  readonly groupTuning?: Readonly<Record<string, ConsumerTuning>>;
  /** Groups whose function runs in a VPC, by name (`groups.<group>.vpc` in the stage settings). */
  readonly groupVpcs?: Readonly<Record<string, VpcPlacement>>;
  /** `docs/runbook.md` as an operator can open it (repository web URL). */
  readonly runbookUrl: string;
  /** The stage's RocketMQ bridge; deployed only when `enabled`. */
  readonly bridge?: BridgeStageSettings;
  /**
   * Roles allowed to send to the source queues and the bus besides the stage's bridge (`senderRoleArns`): bridges run
   * elsewhere, which read the signing key to sign.
   */
  readonly senderRoleArns?: readonly string[];
  /** Roles operators run `ops` writes with (`operatorRoleArns`): redrive, re-sign, revoke, put secret values. */
  readonly operatorRoleArns?: readonly string[];
  /**
   * Break-glass roles that may revoke a signing key and do nothing else (`keyRevokerRoleArns`): `ops keys revoke`
   * when the stage names no operator role.
   */
  readonly keyRevokerRoleArns?: readonly string[];
  /** Where the consumers' and the bridge's spans go (`tracing` in the stage settings; default off). */
  readonly tracing?: StageTracing;
}

/** Everything one deployment of the consumers needs: tables, alarm routing, a bus, the groups, a dashboard. */
export class RocketMQConsumersStack extends Stack {
  readonly dataKey: StageDataKey;
  readonly tables: ConsumerTables;
  readonly alarmRouting: AlarmRouting;
  readonly eventBus: events.EventBus;
  readonly groups: RocketMQConsumerGroup[];
  /** The outbox (table, relay, DLQ, alarms) of every group whose entry `publishes`. */
  readonly outboxes: GroupOutbox[];
  readonly bridge?: StageBridge;
  /** The key the bridges sign envelopes with and every consumer checks them against: in every deployed stage. */
  readonly envelopeSigningKey: ProtectedSecret;
  /** The secrets of the outside services that take a bearer token, by service. */
  readonly serviceTokens: Partial<Record<OutsideServiceName, ProtectedSecret>>;

  constructor(scope: Construct, id: string, props: RocketMQConsumersStackProps) {
    super(scope, id, props);
    this.dataKey = new StageDataKey(this, 'DataKey', { prefix: props.prefix });
    this.tables = new ConsumerTables(this, 'Tables', { prefix: props.prefix, encryptionKey: this.dataKey.key });
    this.alarmRouting = new AlarmRouting(this, 'AlarmRouting', {
      ...props,
      prefix: props.prefix,
      runbookUrl: props.runbookUrl,
      dataKey: this.dataKey,
    });
    this.eventBus = new events.EventBus(this, 'RocketMqBus', {
      eventBusName: `${props.prefix}-rocketmq`,
      description: 'RocketMQ messages published by bridges as mq:Topic:SendMessage events',
    });
    // A week of every bridged message, replayable into the queues after an incident.
    this.eventBus.archive('Archive', {
      description: 'Replay source for RocketMQ events',
      eventPattern: { account: [this.account] },
      retention: Duration.seconds(BUS_ARCHIVE_RETENTION_SECONDS),
    });
    // Every deployed stage has the key, whether or not its own bridge runs: its consumers refuse to
    // start without it, and a bridge run elsewhere (senderRoleArns) signs with it. Retained: removing
    // it would leave every letter in flight unverifiable.
    this.envelopeSigningKey = new ProtectedSecret(this, 'EnvelopeSigningKey', {
      secretName: signingKeySecretName(props.prefix),
      description:
        'HMAC key the RocketMQ bridges sign envelopes with; the consumers refuse envelopes they did not sign',
      generate: { passwordLength: 64, excludePunctuation: true },
    });
    Validations.of(this.envelopeSigningKey.secret).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SMG4',
      reason:
        'Rotated by putting a new value (docs/runbook.md, "Rotating the envelope signing key"): consumers accept every version retired within a copy lifetime and the bridge signs with a new version only once it is two minutes old, so no rotation function is needed; ops keys revoke takes a compromised one out at once.',
    });
    this.serviceTokens = serviceTokensOf(this, props.services);
    this.groups = (props.groups ?? CONSUMER_GROUPS).map(
      (definition: ConsumerGroupDefinition) =>
        new RocketMQConsumerGroup(this, pascal(definition.group), {
          ...props.tuning,
          ...tuningOf(definition.tuning),
          ...props.groupTuning?.[definition.group],
          definition,
          prefix: props.prefix,
          tables: this.tables,
          dataKey: this.dataKey,
          alarmTopic: this.alarmRouting.topic,
          runbookUrl: props.runbookUrl,
          eventBus: this.eventBus,
          services: props.services,
          vpc: props.groupVpcs?.[definition.group],
          envelopeSigningKey: this.envelopeSigningKey,
          serviceTokens: this.serviceTokens,
          tracing: props.tracing,
        }),
    );
    const xrayNote = xrayTracingNote(props.tracing);
    if (xrayNote) Annotations.of(this).addInfo(xrayNote);
    if (props.bridge?.enabled) {
      this.bridge = new StageBridge(this, 'Bridge', {
        prefix: props.prefix,
        settings: props.bridge,
        groups: this.groups,
        alarmTopic: this.alarmRouting.topic,
        runbookUrl: props.runbookUrl,
        envelopeSigningKey: this.envelopeSigningKey.secret,
        tracing: props.tracing?.backend,
        operatorRoleArns: props.operatorRoleArns ?? [],
        outbound: this.groups.some((g) => g.definition.publishes?.some((p) => p.target === 'rocketmq')),
      });
      this.envelopeSigningKey.grantRead(this.bridge.bridge.taskDefinition.taskRole, { versions: true });
    }
    this.outboxes = this.createOutboxes(props);
    new ConsumerDashboard(this, 'Dashboard', { prefix: props.prefix, groups: this.groups, outboxes: this.outboxes });
    this.restrictSenders(props);
    this.restrictSecrets(props);
    this.guardStores(props.operatorRoleArns ?? []);
  }

  /** The outbox of every group whose entry `publishes`, after the bridge (a `rocketmq` target is its outbound queue). */
  private createOutboxes(props: RocketMQConsumersStackProps): GroupOutbox[] {
    return this.groups
      .filter((group) => (group.definition.publishes ?? []).length > 0)
      .map(
        (group) =>
          new GroupOutbox(group, 'Outbox', {
            prefix: props.prefix,
            dataKey: this.dataKey,
            alarmTopic: this.alarmRouting.topic,
            runbookUrl: props.runbookUrl,
            envelopeSigningKey: this.envelopeSigningKey,
            destinations: { groups: this.groups, eventBus: this.eventBus, outboundQueue: this.bridge?.outboundQueue },
            tracing: props.tracing,
          }),
      );
  }

  /**
   * Only the deployment changes the queues, the bus's rules and the tables; only the consumers and the operators take
   * messages off the queues and write items, each table by the roles whose code writes it (packages/infra/src/resource-guards.ts).
   */
  private guardStores(operators: readonly string[]): void {
    for (const group of this.groups) group.guardQueues(operators);
    for (const outbox of this.outboxes) outbox.guard(operators);
    this.bridge?.guardOutbound(
      this.outboxes.filter((o) => o.sendsToOutbound).map((o) => o.relayRole.roleArn),
      operators,
    );
    this.alarmRouting.guard(operators);
    guardBus(this.eventBus);
    for (const key of Object.keys(TABLES) as TableKey[]) {
      const writers = this.groups.filter((g) => g.definition.tables.includes(key)).map((g) => g.role.roleArn);
      guardTable(this.tables.table(key), [...writers, ...operators]);
    }
  }

  /**
   * Who reads and who changes each secret (packages/infra/src/protected-secret.ts): the signing key, the bridges that sign (the
   * stage's, granted above, and those of senderRoleArns) and the operators, who re-sign reviewed letters after a
   * revocation; the DingTalk robot, the notifier and the operators (`alarm:test`). Operators put new values.
   */
  private restrictSecrets(props: RocketMQConsumersStackProps): void {
    const operators = props.operatorRoleArns ?? [];
    this.envelopeSigningKey.allowReaders([...(props.senderRoleArns ?? []), ...operators]);
    this.envelopeSigningKey.allowRevokers(props.keyRevokerRoleArns ?? [], REVOKED_STAGE_PREFIX);
    this.alarmRouting.robotSecret.allowReaders(operators);
    for (const secret of [this.envelopeSigningKey, this.alarmRouting.robotSecret, ...Object.values(this.serviceTokens)])
      secret?.allowKeepers(operators);
    if (!this.alarmRouting.robotSecret.owned) {
      Annotations.of(this).addWarningV2(
        '@rocketmq/robot-secret-key',
        `${props.prefix}: dingTalkSecretName names a secret this stack does not own: it gets the resource policy, but keeps the KMS key it was created with until it is re-encrypted with alias/${this.alarmRouting.robotSecret.secret.secretName} (docs/deploy.md)`,
      );
    }
  }

  /**
   * Only the stage's bridge, the listed roles and each group's own rule may put messages where a consumer acts on them.
   */
  private restrictSenders(props: RocketMQConsumersStackProps): void {
    const senders = {
      roleArns: [
        ...(this.bridge ? [this.bridge.bridge.taskDefinition.taskRole.roleArn] : []),
        ...(props.senderRoleArns ?? []),
        ...(props.operatorRoleArns ?? []),
      ],
    };
    // A relay sends only to the source queues of the groups subscribed to what it publishes, and to the bus only
    // when a topic of its group targets it.
    const relaysTo = (group: RocketMQConsumerGroup) =>
      this.outboxes.filter((o) => o.sqsSubscribers.includes(group)).map((o) => o.relayRole.roleArn);
    for (const group of this.groups) group.restrictSenders(senders, relaysTo(group));
    const relaysPuttingEvents = this.outboxes.filter((o) => o.putsEvents).map((o) => o.relayRole.roleArn);
    restrictBusSenders(this.eventBus, { roleArns: [...senders.roleArns, ...relaysPuttingEvents] });
    if (senders.roleArns.length === 0) {
      Annotations.of(this).addWarningV2(
        '@rocketmq/no-senders',
        `${props.prefix}: no bridge is enabled and senderRoleArns is empty, so no one may send to the source queues or the bus: enable bridge or list the roles that send`,
      );
    }
  }
}

/**
 * The stack's own secret for each outside service that takes a bearer token: created with a
 * placeholder under its own key, retained, its real token put by an operator after the first deployment.
 */
function serviceTokensOf(
  scope: Construct,
  services: RocketMQConsumersStackProps['services'],
): Partial<Record<OutsideServiceName, ProtectedSecret>> {
  const tokens: Partial<Record<OutsideServiceName, ProtectedSecret>> = {};
  for (const [name, setting] of Object.entries(services ?? {}) as Array<[OutsideServiceName, ServiceSetting]>) {
    if (setting.auth.kind !== 'bearer') continue;
    const token = new ProtectedSecret(scope, `${pascal(name)}Token`, {
      secretName: setting.auth.secretName,
      description: `Bearer token of ${name}; put the value after the first deployment (docs/deploy.md)`,
      generate: { excludePunctuation: true, passwordLength: 64 },
    });
    Validations.of(token.secret).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SMG4',
      reason:
        "The token is issued by the service's owner, so a rotation function cannot mint one; rotation is putting the new token (docs/deploy.md, outside services).",
    });
    tokens[name] = token;
  }
  return tokens;
}

function pascal(name: string): string {
  return name
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}
