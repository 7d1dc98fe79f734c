import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { CONSUMER_GROUPS, type ConsumerGroupDefinition, type OutsideServiceName } from '../lib/config/resources.ts';
import { AlarmRouting, type AlarmRoutingProps } from './alarm-routing.ts';
import { RocketMQConsumerGroup, tuningOf, type ConsumerTuning } from './consumer-group.ts';
import { ConsumerDashboard } from './dashboard.ts';
import { ConsumerTables } from './tables.ts';
import type { BridgeStageSettings, VpcPlacement } from './deployment-settings.ts';
import { StageBridge } from './bridge/stage-bridge.ts';
import type { ServiceSetting } from './outside-service.ts';

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
}

/** Everything one deployment of the consumers needs: tables, alarm routing, a bus, the groups, a dashboard. */
export class RocketMQConsumersStack extends Stack {
  readonly tables: ConsumerTables;
  readonly alarmRouting: AlarmRouting;
  readonly eventBus: events.EventBus;
  readonly groups: RocketMQConsumerGroup[];
  readonly bridge?: StageBridge;

  constructor(scope: Construct, id: string, props: RocketMQConsumersStackProps) {
    super(scope, id, props);
    this.tables = new ConsumerTables(this, 'Tables', { prefix: props.prefix });
    this.alarmRouting = new AlarmRouting(this, 'AlarmRouting', { ...props, prefix: props.prefix, runbookUrl: props.runbookUrl });
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
        }),
    );
    new ConsumerDashboard(this, 'Dashboard', { prefix: props.prefix, groups: this.groups });
    if (props.bridge?.enabled) {
      this.bridge = new StageBridge(this, 'Bridge', { prefix: props.prefix, settings: props.bridge, groups: this.groups, alarmTopic: this.alarmRouting.topic, runbookUrl: props.runbookUrl });
    }
  }
}

function pascal(name: string): string {
  return name
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}
