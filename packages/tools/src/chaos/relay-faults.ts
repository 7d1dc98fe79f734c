import type { LocalRelaysOptions } from '../local/local-relays.ts';
import { seededRandom } from '../local/seeded-random.ts';

/**
 * The outbox relay's faults in a chaos run, each drawn from the run's seed:
 * - `kill`: the relay dies after the send and before the mark (its `UpdateItem` to RELAYED never
 *   arrives): the stream hands the record back, and a new relay instance, which remembers nothing the
 *   dead one sent, sends the same envelope again;
 * - `throttle`: a subscriber's queue refuses a send as throttled (the relay holds the record's message
 *   group back and the stream hands it back);
 * - `redeliver`: the stream hands a batch once more, from its first record (a lost checkpoint).
 * Each is a duplicate the downstream consumer must absorb; none may lose an event.
 */
export interface RelayFaultRates {
  readonly kill: number;
  readonly throttle: number;
  readonly redeliver: number;
}

export const DEFAULT_RELAY_FAULT_RATES: RelayFaultRates = { kill: 0.05, throttle: 0.03, redeliver: 0.1 };

/** How many of each the run put in. */
export interface RelayFaultTally {
  kills: number;
  throttles: number;
  redeliveries: number;
}

export function relayFaults(
  seed: number,
  rates: RelayFaultRates,
  tally: RelayFaultTally,
): NonNullable<LocalRelaysOptions['faults']> {
  return (group, { sqs, dynamoDb, tableName }) => {
    let killed = false;
    const random = seededRandom(seed ^ [...group].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7));
    dynamoDb.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { TableName?: string };
        const marksRelayed = /Update/.test(context.commandName ?? '') && JSON.stringify(args.input).includes('RELAYED');
        if (marksRelayed && input.TableName === tableName && random() < rates.kill) {
          tally.kills++;
          killed = true;
          throw Object.assign(new Error('the relay died after the send, before the mark'), { name: 'RelayKilled' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'chaosRelayKill' },
    );
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'SendMessageCommand' && random() < rates.throttle) {
          tally.throttles++;
          throw Object.assign(new Error('Rate exceeded (injected)'), { name: 'ThrottlingException' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'chaosRelayThrottle' },
    );
    return {
      restart: () => {
        const replace = killed;
        killed = false;
        return replace;
      },
      redeliver: () => {
        const again = random() < rates.redeliver;
        if (again) tally.redeliveries++;
        return again;
      },
    };
  };
}
