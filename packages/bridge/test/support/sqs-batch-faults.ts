import type { SQSClient } from '@aws-sdk/client-sqs';

/**
 * Per-entry failures of `SendMessageBatch`, which the emulator never produces (it accepts any
 * body of any size). Chosen entries are taken out of the request before it is sent and come back
 * in `Failed`, as SQS reports a throttled or rejected entry; the others really reach the queue.
 */
export function failBatchEntries(sqs: SQSClient, shouldFail: (body: string) => boolean, code = 'InternalError'): void {
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Entries?: { Id: string; MessageBody: string }[] };
      if (context.commandName !== 'SendMessageBatchCommand' || !input.Entries) return next(args);
      const failing = input.Entries.filter((e) => shouldFail(e.MessageBody));
      if (failing.length === 0) return next(args);
      const kept = input.Entries.filter((e) => !failing.includes(e));
      const output =
        kept.length > 0
          ? ((await next({ ...args, input: { ...input, Entries: kept } as never })).output as {
              Successful?: unknown[];
              Failed?: unknown[];
            })
          : { Successful: [], Failed: [] };
      const failed = failing.map((e) => ({
        Id: e.Id,
        SenderFault: false,
        Code: code,
        Message: 'injected entry failure',
      }));
      return { output: { ...output, Failed: [...(output.Failed ?? []), ...failed] }, response: {} } as never;
    },
    { step: 'initialize', name: 'failBatchEntries' },
  );
}

/**
 * Whole `SendMessageBatch` calls failing, as when SQS is unreachable or throttles the request:
 * a call with an entry `shouldFail` picks is rejected before anything of it reaches the queue.
 */
export function failBatchRequests(sqs: SQSClient, shouldFail: (bodies: readonly string[]) => boolean): void {
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Entries?: { MessageBody: string }[] };
      if (
        context.commandName === 'SendMessageBatchCommand' &&
        input.Entries &&
        shouldFail(input.Entries.map((e) => e.MessageBody))
      ) {
        throw Object.assign(new Error('injected: SendMessageBatch failed'), {
          name: 'ServiceUnavailable',
          $fault: 'server',
        });
      }
      return next(args);
    },
    { step: 'initialize', name: 'failBatchRequests' },
  );
}
