// Writes docs/envelope.schema.json from the envelope parser's schema (`npm run schema`).
import { writeFileSync } from 'node:fs';
import { envelopeJsonSchema } from '@rocketmq-lambda/runtime/rocketmq/index.ts';

export const SCHEMA_PATH = new URL('../../../../docs/envelope.schema.json', import.meta.url);
export const renderSchema = () => `${JSON.stringify(envelopeJsonSchema(), null, 2)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(SCHEMA_PATH, renderSchema());
  console.log(`wrote ${SCHEMA_PATH.pathname}`);
}
