import { App } from 'aws-cdk-lib';
import { buildApp } from './consumers-app.ts';
import { buildSandboxApp, SANDBOX_CONTEXT_KEY } from './sandbox-app.ts';
import { SecurityBaselineCheck } from './security-baseline.ts';

// Entry point of `cdk synth` / `cdk deploy` (see cdk.json): the pipeline and its stages, checked
// against the committed security baseline; or, with `-c sandbox=<settings file>`, one stage alone
// for a trial in an account of one's own (docs/deploy.md, "A sandbox"), which no pipeline deploys.
const app = new App();
(app.node.tryGetContext(SANDBOX_CONTEXT_KEY) === undefined
  ? buildApp(app, { securityBaseline: new SecurityBaselineCheck() })
  : buildSandboxApp(app)
).app.synth();
