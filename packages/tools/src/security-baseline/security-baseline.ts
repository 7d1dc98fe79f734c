import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  baselineOf,
  buildApp,
  differences,
  REPOSITORY_ROOT,
  readSecurityBaseline,
  SECURITY_BASELINE_PATH,
  writeSecurityBaseline,
} from '@rocketmq-lambda/infra/index.ts';
import { App, cx_api } from 'aws-cdk-lib';

/**
 * `npm run security-baseline:update`: synthesise the app with cdk.json's settings (no bundling:
 * policies do not depend on code) and record every Deny and bus policy statement in
 * packages/infra/src/security-baseline.json. Prints what changed; committing the file is what puts the change
 * in front of a reviewer.
 */
const outdir = mkdtempSync(path.join(tmpdir(), 'security-baseline-'));
try {
  const { context } = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
  const app = new App({ outdir, context: { ...context, [cx_api.BUNDLING_STACKS]: [] }, stackTraces: false });
  const assembly = buildApp(app).app.synth();
  const baseline = baselineOf(
    assembly.stacksRecursively.map((s) => ({ stackConstructPath: s.hierarchicalId, templatePath: s.templateFullPath })),
  );
  const changes = differences(readSecurityBaseline(), baseline);
  writeSecurityBaseline(baseline);
  for (const { stack, logicalId, added, removed } of changes)
    console.info(`${stack} ${logicalId}: ${added.length} statement(s) added, ${removed.length} removed`);
  console.info(
    `${path.relative(REPOSITORY_ROOT, SECURITY_BASELINE_PATH)}: ${changes.length === 0 ? 'unchanged' : `${changes.length} resource(s) changed; commit it with the change, for review`}`,
  );
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
