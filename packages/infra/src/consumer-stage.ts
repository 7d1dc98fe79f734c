import { Stage, type StageProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { RocketMQConsumersStack, type RocketMQConsumersStackProps } from './consumer-stack.ts';

export interface ConsumerStageProps extends StageProps {
  readonly consumers: Omit<RocketMQConsumersStackProps, 'env'>;
}

/** One deployment environment (test, production): the consumers' stack, deployed by the pipeline. */
export class ConsumerStage extends Stage {
  readonly consumers: RocketMQConsumersStack;

  constructor(scope: Construct, id: string, props: ConsumerStageProps) {
    super(scope, id, props);
    this.consumers = new RocketMQConsumersStack(this, 'Consumers', {
      ...props.consumers,
      description: `RocketMQ consumers with exactly-once effects (${props.consumers.prefix})`,
      terminationProtection: true,
    });
  }
}
