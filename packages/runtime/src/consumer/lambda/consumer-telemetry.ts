import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { ConsumerMetric } from '../../config/index.ts';
import { HeldBackError } from '../failures/errors.ts';
import type { RecordReport } from '../settlement.ts';

/** Turns each record's report into one structured log line and its metrics. */
export function consumerTelemetry(logger: Logger, metrics: Metrics) {
  return (report: RecordReport) => {
    const s = report.settlement;
    const fields = {
      group: report.group,
      msgId: report.msgId,
      key: report.key,
      ...(report.traceId === undefined ? {} : { traceId: report.traceId }),
      sqsMessageId: report.sqsMessageId,
      ...(report.messageGroupId === undefined ? {} : { messageGroupId: report.messageGroupId }),
      attempt: report.attempt,
      ...(report.redriveCount === undefined ? {} : { redriveCount: report.redriveCount }),
      outcome: s.outcome,
      disposition: report.disposition.action,
      ...(s.outcome === 'duplicate' ? { reason: s.reason, winnerMsgId: s.winnerMsgId } : {}),
      ...(s.outcome === 'filtered' ? { tag: s.tag ?? null } : {}),
      ...(s.outcome === 'failed'
        ? { errorCode: s.error.code, errorClass: s.error.classification, reason: s.error.message }
        : {}),
      ...(report.disposition.action === 'retry' ? { retryInSeconds: report.disposition.delaySeconds } : {}),
    };
    const count = (name: string) => metrics.addMetric(name, MetricUnit.Count, 1);
    if (report.messageGroupId !== undefined && report.sentAt !== undefined && report.disposition.action === 'retry') {
      metrics.addMetric(
        ConsumerMetric.messageGroupWait,
        MetricUnit.Seconds,
        Math.max(0, (Date.now() - report.sentAt) / 1000),
      );
    }
    switch (s.outcome) {
      case 'processed':
        count(ConsumerMetric.processed);
        logger.info('record processed', fields);
        break;
      case 'duplicate':
        count(ConsumerMetric.duplicates);
        logger.info('duplicate suppressed', fields);
        break;
      case 'filtered':
        count(ConsumerMetric.filtered);
        logger.debug('record filtered by tag', fields);
        break;
      case 'failed':
        if (s.error instanceof HeldBackError) {
          count(ConsumerMetric.heldBack);
          logger.info('record held back behind its message group', fields);
          break;
        }
        if (s.error.code === 'PAYLOAD_CONFLICT') count(ConsumerMetric.conflicts);
        if (s.error.classification === 'permanent') count(ConsumerMetric.permanentErrors);
        if (report.disposition.action === 'retry') count(ConsumerMetric.retried);
        if (report.disposition.action === 'dead-letter') count(ConsumerMetric.deadLettered);
        (s.error.classification === 'permanent' || report.disposition.action === 'dead-letter'
          ? logger.error
          : logger.warn
        ).call(logger, 'record failed', fields);
        break;
    }
  };
}
