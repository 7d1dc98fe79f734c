import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  IncoherentLifetimesError,
  LegacyLifetimes,
  legacyHorizonOf,
} from '../../../src/config/delivery-lifetimes.ts';

describe('LegacyLifetimes: how long a copy of a message the legacy consumer processed can come back', () => {
  it("derives RocketMQ 4.x's 16 retries over 4h45m40s, then 72 h of %DLQ% retention", () => {
    const legacy = new LegacyLifetimes();
    expect(legacy.retryWindowSeconds).toBe(4 * 3_600 + 45 * 60 + 40);
    expect(legacy.deadLetterRetentionSeconds).toBe(72 * 3_600);
    expect(legacy.copyLifetimeSeconds).toBe(17_140 + 259_200);
  });

  it('follows the group’s maxReconsumeTimes and the broker’s levels, capped at the last level as the broker does', () => {
    expect(new LegacyLifetimes({ maxReconsumeTimes: 2 }).retryWindowSeconds).toBe(10 + 30);
    expect(new LegacyLifetimes({ maxReconsumeTimes: 20 }).retryWindowSeconds).toBe(17_140 + 4 * 7_200);
    expect(
      new LegacyLifetimes({ maxReconsumeTimes: 3, messageDelayLevel: '1s 1s 2s 3s', fileReservedTimeHours: 1 })
        .copyLifetimeSeconds,
    ).toBe(2 + 3 + 3 + 3_600);
  });

  it('refuses settings it cannot read, naming them', () => {
    expect(() => new LegacyLifetimes({ messageDelayLevel: '1s 5x' })).toThrow(/messageDelayLevel "1s 5x": "5x"/);
    expect(() => new LegacyLifetimes({ maxReconsumeTimes: -1 })).toThrow(IncoherentLifetimesError);
    expect(() => new LegacyLifetimes({ fileReservedTimeHours: 0 })).toThrow(/fileReservedTime is 0 h/);
  });
});

describe('legacyHorizonOf: the lifetime of an imported record', () => {
  it('is the legacy copy lifetime, then the group’s own record TTL for the re-sent copy', () => {
    const horizon = legacyHorizonOf({ group: 'point-consumer-group' }, {});
    expect(horizon.recordTtlSeconds).toBe(DEFAULT_RECORD_TTL_SECONDS);
    expect(horizon.importedRecordLifetimeSeconds).toBe(276_340 + DEFAULT_RECORD_TTL_SECONDS);
  });

  it('refuses, naming both settings, legacy keys that expire before a copy can stop arriving (the article’s 24 h keys)', () => {
    expect(() => legacyHorizonOf({}, { dedupKeyTtlSeconds: 86_400 })).toThrow(
      /the legacy dedup keys expire after 86400s \(their TTL\) but a copy .* can come back for 276340s \(retry window 17140s \(maxReconsumeTimes 16\) \+ %DLQ% retention 259200s \(fileReservedTime 72 h\)\)/,
    );
    expect(
      legacyHorizonOf({}, { dedupKeyTtlSeconds: 86_400 }, { acceptExpiredKeys: true }).legacy.copyLifetimeSeconds,
    ).toBe(276_340);
    expect(() => legacyHorizonOf({}, { dedupKeyTtlSeconds: 7 * 86_400 })).not.toThrow();
  });

  it('refuses a group whose own lifetimes disagree, as at synth', () => {
    expect(() => legacyHorizonOf({ group: 'g', idempotencyTtlSeconds: 86_400 }, {})).toThrow(
      /consumer group g: idempotency records live 86400s/,
    );
  });
});
