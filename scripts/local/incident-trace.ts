import { createDynamoDb } from '../../lib/aws/index.ts';
import { runOps } from '../ops.ts';
import type { LocalRunResult, LogShippingAccount } from './local-pipeline.ts';

/**
 * The end of the local run: `ops trace` of one order in each group the run drove, read as on
 * AWS from the log lines the run shipped to CloudWatch Logs, the dedup records, the DLQs and
 * the ledger. The command runs in-process with the run's DynamoDB client, since the local
 * emulator may serve DynamoDB on an endpoint of its own.
 */
export async function orderTraceSections(
  result: LocalRunResult,
  order: { orderNo: string; userId: string },
): Promise<string> {
  const dynamoDb = createDynamoDb(result.resources.aws);
  const started = performance.now();
  const out: string[] = [];
  for (const group of result.groups) {
    let stdout = '';
    let stderr = '';
    const argv = ['trace', order.orderNo, '--group', group, '--user', order.userId];
    const target = ['--endpoint', result.endpoint, '--prefix', result.resources.prefix, '--quiet'];
    const code = await runOps([...argv, ...target], {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { isTTY: false, write: (s: string) => (stderr += s) },
      dynamoDb,
    });
    out.push('', `$ npm run ops -- ${argv.join(' ')}   (exit ${code})`, (stdout + stderr).trimEnd());
  }
  dynamoDb.destroy();
  out.push('', `(${result.groups.length} traces read in ${Math.round(performance.now() - started)} ms)`);
  return out.join('\n');
}

export function shippingText(s: LogShippingAccount): string {
  return (
    `Function logs: ${s.lines} JSON lines shipped to ${s.logGroups.join(', ')} in ${s.calls} PutLogEvents calls ` +
    `(${s.putMs} ms of calls beside the consumers; the final flush the run waited for: ${s.finalFlushMs} ms` +
    `${s.refusedBatches > 0 ? `; ${s.refusedBatches} batches refused and retried` : ''}).`
  );
}
