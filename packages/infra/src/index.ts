/**
 * The CDK app's door: the app as a whole (the pipeline with its stages, a sandbox stage), where the
 * repository is, the security baseline, and the constructs the tooling and other wings' tests build
 * stacks from. The `exports` of packages/infra/package.json names this file only; what else the app
 * holds stays inside it (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export { RocketMQBridgeService } from './bridge/bridge-service.ts';
export { buildApp } from './consumers-app.ts';
export { StageDataKey } from './data-key.ts';
export { REPOSITORY_ROOT } from './project-function.ts';
export { buildSandboxApp, SANDBOX_CONTEXT_KEY } from './sandbox-app.ts';
export {
  baselineOf,
  differences,
  readSecurityBaseline,
  SECURITY_BASELINE_PATH,
  writeSecurityBaseline,
} from './security-baseline.ts';
export { ConsumerTables } from './tables.ts';
