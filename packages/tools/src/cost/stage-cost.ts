/**
 * What a deployed stage costs a month before it handles a message, counted from its synthesized
 * CloudFormation template, so the table in docs/deploy.md is the template's and cannot drift
 * (packages/infra/test/stage-cost.test.ts renders it again and finds it there). Prices are list prices
 * from AWS's public pricing pages for one region (`PRICE_BASIS`): a basis to check, not a quote.
 */
import { ConsumerMetric } from '@rocketmq-lambda/runtime/config/index.ts';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;
export interface Template {
  readonly Resources: Resources;
}

/** The one region and month the prices are for; what each page named said when the table was written. */
export const PRICE_BASIS = {
  region: 'us-east-1',
  hoursPerMonth: 730,
  asOf: 'AWS pricing pages as of 2025, list prices; not re-read here (no network): check them before relying on them',
} as const;

export const LIST_PRICES = {
  kmsKey: { usd: 1, unit: 'key-month', page: 'AWS Key Management Service pricing' },
  secret: { usd: 0.4, unit: 'secret-month', page: 'AWS Secrets Manager pricing' },
  alarmMetric: { usd: 0.1, unit: 'standard-resolution alarm metric-month', page: 'Amazon CloudWatch pricing' },
  dashboard: { usd: 3, unit: 'dashboard-month (an account’s first 3 are free)', page: 'Amazon CloudWatch pricing' },
  customMetric: { usd: 0.3, unit: 'custom metric-month (first 10,000)', page: 'Amazon CloudWatch pricing' },
  archive: { usd: 0.1, unit: 'GB archived, USD 0.023 a GB-month stored', page: 'Amazon EventBridge pricing' },
  fargateVcpu: { usd: 0.04048, unit: 'vCPU-hour (Linux/x86)', page: 'AWS Fargate pricing' },
  fargateGb: { usd: 0.004445, unit: 'GB-hour', page: 'AWS Fargate pricing' },
  interfaceEndpoint: { usd: 0.01, unit: 'interface endpoint per AZ-hour', page: 'AWS PrivateLink pricing' },
  buildMinute: { usd: 0.01, unit: 'build minute (general1.medium, Linux)', page: 'AWS CodeBuild pricing' },
  pipelineMinute: { usd: 0.002, unit: 'action execution minute (100 a month free)', page: 'AWS CodePipeline pricing' },
} as const;

/** One row of the table: how many the template holds, and what they cost a month when that is fixed. */
export interface CostItem {
  readonly item: string;
  readonly count: number;
  /** `undefined`: no fixed monthly cost (per GB, per build minute). */
  readonly monthlyUsd: number | undefined;
  readonly basis: string;
}

const ofType = (template: Template, type: string) =>
  Object.entries(template.Resources).filter(([, r]) => r.Type === type);

const basis = (price: { usd: number; unit: string; page: string }) =>
  `USD ${price.usd} per ${price.unit} (${price.page})`;

/** The fixed monthly items of one stage's template (its consumers' stack). */
export function stageCost(template: Template): CostItem[] {
  const alarmMetrics = ofType(template, 'AWS::CloudWatch::Alarm').reduce((n, [, a]) => n + metricsOf(a.Properties), 0);
  const groups = ofType(template, 'AWS::Lambda::Function').filter(
    ([, f]) => (f.Properties?.Environment as { Variables?: Record<string, string> })?.Variables?.CONSUMER_GROUP,
  ).length;
  const customMetrics = groups * Object.keys(ConsumerMetric).length;
  const fixed = (item: string, count: number, price: { usd: number; unit: string; page: string }): CostItem => ({
    item,
    count,
    monthlyUsd: round(count * price.usd),
    basis: basis(price),
  });
  return [
    fixed('KMS keys', ofType(template, 'AWS::KMS::Key').length, LIST_PRICES.kmsKey),
    fixed('Secrets Manager secrets', ofType(template, 'AWS::SecretsManager::Secret').length, LIST_PRICES.secret),
    fixed('CloudWatch alarm metrics', alarmMetrics, LIST_PRICES.alarmMetric),
    fixed('CloudWatch dashboards', ofType(template, 'AWS::CloudWatch::Dashboard').length, LIST_PRICES.dashboard),
    fixed('consumer metrics (EMF), at most', customMetrics, LIST_PRICES.customMetric),
    {
      item: 'EventBridge archives',
      count: ofType(template, 'AWS::Events::Archive').length,
      monthlyUsd: undefined,
      basis: basis(LIST_PRICES.archive),
    },
    bridgeTasks(template),
    interfaceEndpoints(template),
  ];
}

/** What a CloudWatch alarm is billed as: one metric, or each metric its math reads. */
function metricsOf(props: Record<string, unknown> | undefined): number {
  const metrics = props?.Metrics as Array<{ MetricStat?: unknown }> | undefined;
  return metrics ? metrics.filter((m) => m.MetricStat !== undefined).length : 1;
}

/**
 * The bridge's Fargate tasks at their floor, all month: the service's desired count, or with CPU
 * target tracking (no desired count in the template) its scalable target's minimum.
 */
function bridgeTasks(template: Template): CostItem {
  const tasks = ofType(template, 'AWS::ECS::Service').map(([id, service]) => {
    const ref = (service.Properties?.TaskDefinition as { Ref?: string } | undefined)?.Ref;
    const definition = ref ? template.Resources[ref]?.Properties : undefined;
    const scaling = ofType(template, 'AWS::ApplicationAutoScaling::ScalableTarget').find(
      ([, t]) =>
        t.Properties?.ScalableDimension === 'ecs:service:DesiredCount' &&
        JSON.stringify(t.Properties?.ResourceId).includes(`"${id}"`),
    );
    return {
      count: Number(service.Properties?.DesiredCount ?? scaling?.[1].Properties?.MinCapacity ?? 1),
      vcpu: Number(definition?.Cpu ?? 0) / 1024,
      gb: Number(definition?.Memory ?? 0) / 1024,
    };
  });
  const count = tasks.reduce((n, t) => n + t.count, 0);
  const hourly = tasks.reduce(
    (n, t) => n + t.count * (t.vcpu * LIST_PRICES.fargateVcpu.usd + t.gb * LIST_PRICES.fargateGb.usd),
    0,
  );
  const sizes = [...new Set(tasks.map((t) => `${t.vcpu} vCPU, ${t.gb} GB`))].join('; ');
  return {
    item: `bridge tasks (Fargate${sizes ? `, ${sizes} each` : ''})`,
    count,
    monthlyUsd: round(hourly * PRICE_BASIS.hoursPerMonth),
    basis: `${basis(LIST_PRICES.fargateVcpu)}, USD ${LIST_PRICES.fargateGb.usd} per ${LIST_PRICES.fargateGb.unit}, ${PRICE_BASIS.hoursPerMonth} h`,
  };
}

/** Interface VPC endpoints the stack creates, one charge per endpoint and subnet (AZ); gateway endpoints are free. */
function interfaceEndpoints(template: Template): CostItem {
  const azHours = ofType(template, 'AWS::EC2::VPCEndpoint')
    .filter(([, e]) => e.Properties?.VpcEndpointType === 'Interface')
    .reduce((n, [, e]) => n + ((e.Properties?.SubnetIds as unknown[] | undefined)?.length ?? 1), 0);
  return {
    item: 'interface VPC endpoints (endpoint-AZs)',
    count: azHours,
    monthlyUsd: round(azHours * LIST_PRICES.interfaceEndpoint.usd * PRICE_BASIS.hoursPerMonth),
    basis: `${basis(LIST_PRICES.interfaceEndpoint)}, ${PRICE_BASIS.hoursPerMonth} h`,
  };
}

/** The pipeline's CodeBuild steps: paid per build minute, so per run, not per month. */
export function pipelineCost(template: Template): CostItem {
  const projects = ofType(template, 'AWS::CodeBuild::Project');
  const medium = projects.filter(
    ([, p]) => (p.Properties?.Environment as { ComputeType?: string })?.ComputeType === 'BUILD_GENERAL1_MEDIUM',
  ).length;
  return {
    item: `pipeline builds (CodeBuild projects, ${medium} of them general1.medium)`,
    count: projects.length,
    monthlyUsd: undefined,
    basis: `${basis(LIST_PRICES.buildMinute)} and ${basis(LIST_PRICES.pipelineMinute)}, per run`,
  };
}

const round = (usd: number) => Math.round(usd * 100) / 100;

/** The table docs/deploy.md holds: each item in a stage and in the sandbox, a month, on its basis. */
export function costTable(columns: { stage: CostItem[]; sandbox: CostItem[]; pipeline: CostItem }): string {
  const money = (usd: number | undefined) => (usd === undefined ? 'per use' : `USD ${usd.toFixed(2)}`);
  const rows = columns.stage.map((s, i) => {
    const b = columns.sandbox[i]!;
    return `| ${s.item} | ${s.count} | ${money(s.monthlyUsd)} | ${b.count} | ${money(b.monthlyUsd)} | ${s.basis} |`;
  });
  const total = (items: CostItem[]) => money(round(items.reduce((n, i) => n + (i.monthlyUsd ?? 0), 0)));
  const p = columns.pipeline;
  return [
    '| item | in a stage | a month | in the sandbox | a month | list price (us-east-1) |',
    '|---|---|---|---|---|---|',
    ...rows,
    `| **fixed, a month** | | **${total(columns.stage)}** | | **${total(columns.sandbox)}** | |`,
    `| ${p.item} | ${p.count} | per run | none | | ${p.basis} |`,
  ].join('\n');
}
