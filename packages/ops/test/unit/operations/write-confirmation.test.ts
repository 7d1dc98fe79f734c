import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirmWrite, WriteNotConfirmedError, type WriteSummary } from '../../../src/operations/write-confirmation.ts';

const summary: WriteSummary = {
  location: {
    arn: 'arn:aws:dynamodb:ap-northeast-1:210987654321:table/prod-point-ledger',
    account: '210987654321',
    region: 'ap-northeast-1',
  },
  resources: [
    ['ledger table', 'prod-point-ledger'],
    ['accounts table', 'prod-point-accounts'],
  ],
  details: ['3 reversal(s)'],
};

/** A terminal where the operator types `typed` (or closes the input: Ctrl-D). */
function terminal(typed: string | null) {
  const input = Object.assign(new PassThrough(), { isTTY: true });
  input.end(typed === null ? undefined : typed);
  return input;
}

async function outcome(yes: boolean, input: (PassThrough & { isTTY?: boolean }) | undefined) {
  let shown = '';
  try {
    await confirmWrite(summary, { yes, input, output: { write: (s: string) => (shown += s) } });
    return { confirmed: true, shown };
  } catch (error) {
    expect(error).toBeInstanceOf(WriteNotConfirmedError);
    return { confirmed: false, shown, reason: (error as Error).message };
  }
}

describe('confirmWrite', () => {
  it('shows the account, the region and every resource before anything else', async () => {
    const { shown } = await outcome(true, undefined);
    expect(shown).toBe(
      'About to write in AWS account 210987654321, region ap-northeast-1:\n' +
        '  ledger table:   prod-point-ledger\n' +
        '  accounts table: prod-point-accounts\n' +
        '  3 reversal(s)\n',
    );
  });

  it.each([
    ['--yes, without a terminal', true, undefined, true],
    ['y on a terminal', false, terminal('y\n'), true],
    ['YES on a terminal', false, terminal(' YES \n'), true],
    ['Enter on a terminal (the default is no)', false, terminal('\n'), false],
    ['n on a terminal', false, terminal('n\n'), false],
    ['a closed terminal (Ctrl-D)', false, terminal(null), false],
    ['no terminal and no --yes', false, Object.assign(new PassThrough(), { isTTY: false }), false],
    ['no input at all and no --yes', false, undefined, false],
  ])('%s', async (_name, yes, input, confirmed) => {
    expect((await outcome(yes, input)).confirmed).toBe(confirmed);
  });
});
