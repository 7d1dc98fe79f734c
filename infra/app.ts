import { buildApp } from './consumers-app.ts';

// Entry point of `cdk synth` / `cdk deploy` (see cdk.json).
buildApp().app.synth();
