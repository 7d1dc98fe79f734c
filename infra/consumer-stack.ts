import { Annotations, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { CONSUMER_GROUPS, type ConsumerGroupDefinition, type OutsideServiceName } from '../lib/config/index.ts';
import { AlarmRouting, type AlarmRoutingProps } from './alarm-routing.ts';
import { StageBridge } from './bridge/stage-bridge.ts';
import { type ConsumerTuning, RocketMQConsumerGroup, tuningOf } from './consumer-group.ts';
import { ConsumerDashboard } from './dashboard.ts';
import type { BridgeStageSettings, VpcPlacement } from './deployment-settings.ts';
import type { ServiceSetting } from './outside-service.ts';
import { restrictBusSenders } from './sender-policy.ts';
import { ConsumerTables } from './tables.ts';

export interface RocketMQConsumersStackProps extends StackProps, Omit<AlarmRoutingProps, 'prefix' | 'runbookUrl'> {
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
  /** Roles allowed to send to the source queues and the bus besides the stage's bridge (`senderRoleArns`). */
  readonly senderRoleArns?: readonly string[];
}

/** Everything one deployment of the consumers needs: tables, alarm routing, a bus, the groups, a dashboard. */
export class RocketMQConsumersStack extends Stack {
  readonly tables: ConsumerTables;
  readonly alarmRouting: AlarmRouting;
  readonly eventBus: events.EventBus;
  readonly groups: RocketMQConsumerGroup[];
  readonly bridge?: StageBridge;
  /** The key the bridge signs envelopes with and the consumers check them against (`bridge.signEnvelopes`). */
  readonly envelopeSigningKey?: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: RocketMQConsumersStackProps) {
    super(scope, id, props);
    this.tables = new ConsumerTables(this, 'Tables', { prefix: props.prefix });
    this.alarmRouting = new AlarmRouting(this, 'AlarmRouting', {
      ...props,
      prefix: props.prefix,
      runbookUrl: props.runbookUrl,
    });
    this.eventBus = new events.EventBus(this, 'RocketMqBus', {
      eventBusName: `${props.prefix}-rocketmq`,
      description: 'RocketMQ messages published by bridges as mq:Topic:SendMessage events',
    });
    // A week of every bridged message, replayable into the queues after an incident.
    this.eventBus.archive('Archive', {
      description: 'Replay source for RocketMQ events',
      eventPattern: { account: [this.account] },
      retention: Duration.days(7),
    });
    if (props.bridge?.enabled && props.bridge.signEnvelopes) {
      this.envelopeSigningKey = new secretsmanager.Secret(this, 'EnvelopeSigningKey', {
        secretName: `${props.prefix}/envelope-signing-key`,
        description:
          'HMAC key the RocketMQ bridge signs envelopes with; the consumers refuse envelopes it did not sign',
        generateSecretString: { passwordLength: 64, excludePunctuation: true },
      });
      Validations.of(this.envelopeSigningKey).acknowledge({
        id: 'AwsSolutions::AwsSolutions-SMG4',
        reason:
          'Rotated by putting a new value (docs/runbook.md, "Rotating the envelope signing key"): consumers accept the AWSCURRENT and AWSPREVIOUS versions and the bridge signs with a new version only once it is six minutes old, so no rotation function is needed.',
      });
    }
    this.groups = (props.groups ?? CONSUMER_GROUPS).map(
      (definition: ConsumerGroupDefinition) =>
        new RocketMQConsumerGroup(this, pascal(definition.group), {
          ...props.tuning,
          ...tuningOf(definition.tuning),
          ...props.groupTuning?.[definition.group],
          definition,
          prefix: props.prefix,
          tables: this.tables,
          alarmTopic: this.alarmRouting.topic,
          runbookUrl: props.runbookUrl,
          eventBus: this.eventBus,
          services: props.services,
          vpc: props.groupVpcs?.[definition.group],
          envelopeSigningKey: this.envelopeSigningKey,
        }),
    );
    new ConsumerDashboard(this, 'Dashboard', { prefix: props.prefix, groups: this.groups });
    if (props.bridge?.enabled) {
      this.bridge = new StageBridge(this, 'Bridge', {
        prefix: props.prefix,
        settings: props.bridge,
        groups: this.groups,
        alarmTopic: this.alarmRouting.topic,
        runbookUrl: props.runbookUrl,
        envelopeSigningKey: this.envelopeSigningKey,
      });
    }
    this.restrictSenders(props);
  }

  /**
   * Only the stage's bridge, the listed roles and each group's own rule may put messages where a consumer acts on them.
   */
  private restrictSenders(props: RocketMQConsumersStackProps): void {
    const senders = {
      roleArns: [
        ...(this.bridge ? [this.bridge.bridge.taskDefinition.taskRole.roleArn] : []),
        ...(props.senderRoleArns ?? []),
      ],
    };
    for (const group of this.groups) group.restrictSenders(senders);
    restrictBusSenders(this.eventBus, senders);
    if (senders.roleArns.length === 0) {
      Annotations.of(this).addWarningV2(
        '@rocketmq/no-senders',
        `${props.prefix}: no bridge is enabled and senderRoleArns is empty, so no one may send to the source queues or the bus: enable bridge or list the roles that send`,
      );
    }
  }
}

function pascal(name: string): string {
  return name
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}
