/**
 * `npm run cost`: what a stage costs a month before its first message, item by item, counted
 * from the synthesized templates (offline) at list prices (`PRICE_BASIS`). `--json` prints the
 * items as JSON. docs/deploy.md, "What a stage costs a month".
 */
import { costTable, PRICE_BASIS, pipelineCost, stageCost } from './stage-cost.ts';
import { stageTemplates } from './stage-templates.ts';

const templates = stageTemplates();
const columns = {
  stage: stageCost(templates.stage),
  sandbox: stageCost(templates.sandbox),
  pipeline: pipelineCost(templates.pipeline),
};
process.stdout.write(
  process.argv.includes('--json')
    ? `${JSON.stringify({ basis: PRICE_BASIS, ...columns })}\n`
    : `${costTable(columns)}\n\nPrices: ${PRICE_BASIS.region}, ${PRICE_BASIS.asOf}.\n`,
);
