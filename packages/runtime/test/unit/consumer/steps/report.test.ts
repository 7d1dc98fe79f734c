import { describe, expect, it } from 'vitest';
import type { RecordReport } from '../../../../src/consumer/settlement.ts';
import { reportEach } from '../../../../src/consumer/steps/report.ts';

const report = (sqsMessageId: string): RecordReport => ({
  group: 'g',
  sqsMessageId,
  attempt: 1,
  settlement: { outcome: 'processed' },
  disposition: { action: 'ack' },
});

describe('reportEach', () => {
  it('hands every report to the observer even when it throws, then raises the first error', () => {
    const seen: string[] = [];
    const observe = (r: RecordReport) => {
      seen.push(r.sqsMessageId);
      throw new Error(`sink refused ${r.sqsMessageId}`);
    };
    expect(() => reportEach([report('m-1'), report('m-2')], observe)).toThrow('sink refused m-1');
    expect(seen).toEqual(['m-1', 'm-2']);
  });

  it('does nothing without an observer', () => {
    expect(() => reportEach([report('m-1')], undefined)).not.toThrow();
  });
});
