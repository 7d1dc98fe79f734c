import { ConsumptionError } from '@rocketmq-lambda/runtime/consumer/index.ts';

/** A failed call to an outside service, with the HTTP status when the service answered at all. */
export abstract class OutsideServiceCallError extends ConsumptionError {
  constructor(
    message: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
