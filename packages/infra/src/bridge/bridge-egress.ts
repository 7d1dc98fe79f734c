import type { BridgeStageSettings } from '../deployment-settings.ts';

/** RocketMQ 4.x brokers' default `listenPort`: where a name server sends its clients to pull. */
export const DEFAULT_BROKER_PORT = 10_911;

/** One egress rule of the bridge's tasks: TCP to a port of an IPv4 block. */
export interface BridgeEgressRule {
  readonly cidr: string;
  readonly port: number;
  readonly description: string;
}

/**
 * Where a stage's bridge tasks may connect, from the stage's bridge settings: HTTPS anywhere (the
 * AWS APIs, through NAT or VPC endpoints, whose addresses are not fixed: SQS, EventBridge, Secrets
 * Manager, CloudWatch Logs, and ECR with S3 for the image on Fargate 1.4, all over the task's own
 * interface), and the cluster's ports towards `clusterCidrs`: the proxies' (RocketMQ 5) or the name
 * servers' and the brokers' (RocketMQ 4). Nothing else: the VPC's DNS resolver and the task metadata
 * and credentials endpoint are not subject to security groups, so they need no rule.
 */
export function bridgeEgress(settings: BridgeStageSettings): BridgeEgressRule[] {
  const endpointPorts = settings.endpoints
    .split(';')
    .map((endpoint) => Number(endpoint.slice(endpoint.lastIndexOf(':') + 1)));
  const clusterPorts =
    settings.protocol === 'rocketmq4'
      ? [
          ...endpointPorts.map((port) => ({ port, what: 'RocketMQ name server' })),
          ...(settings.brokerPorts ?? [DEFAULT_BROKER_PORT]).map((port) => ({ port, what: 'RocketMQ broker' })),
        ]
      : endpointPorts.map((port) => ({ port, what: 'RocketMQ proxy' }));
  const rules: BridgeEgressRule[] = [{ cidr: '0.0.0.0/0', port: 443, description: 'AWS APIs over HTTPS' }];
  for (const { port, what } of clusterPorts)
    for (const cidr of settings.clusterCidrs)
      if (!rules.some((r) => r.port === port && r.cidr === cidr))
        rules.push({ cidr, port, description: `${what} (tcp ${port})` });
  return rules;
}
