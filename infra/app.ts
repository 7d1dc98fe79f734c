import { App } from 'aws-cdk-lib';
import { buildApp } from './consumers-app.ts';
import { buildSandboxApp, SANDBOX_CONTEXT_KEY } from './sandbox-app.ts';

// Entry point of `cdk synth` / `cdk deploy` (see cdk.json): the pipeline and its stages, or with
// `-c sandbox=<settings file>` one stage alone (docs/deploy.md, "A sandbox").
const app = new App();
(app.node.tryGetContext(SANDBOX_CONTEXT_KEY) === undefined ? buildApp(app) : buildSandboxApp(app)).app.synth();
