import { App } from 'aws-cdk-lib';
import { buildApp } from './consumers-app.ts';
import { SecurityBaselineCheck } from './security-baseline.ts';

// Entry point of `cdk synth` / `cdk deploy` (see cdk.json): the committed security baseline is checked.
buildApp(new App(), { securityBaseline: new SecurityBaselineCheck() }).app.synth();
