import { describe, expect, it } from 'vitest';
import {
  ConsumptionError,
  classify,
  IllegalTransitionError,
  InvalidPayloadError,
  invalidEnvelope,
  LeaseHeldError,
  NotYetApplicableError,
  PayloadConflictError,
  TransientFailureError,
  WriteRejectedError,
} from '../../../../src/consumer/failures/errors.ts';
import { LeaseLostError } from '../../../../src/consumer/idempotency/lease.ts';
import { InvalidEnvelopeError } from '../../../../src/rocketmq/index.ts';
import { serviceError } from '../recording-sqs.ts';

describe('the failure classes', () => {
  it.each([
    [new InvalidPayloadError('bad points'), 'permanent', 'INVALID_PAYLOAD'],
    [invalidEnvelope(new InvalidEnvelopeError('not JSON')), 'permanent', 'INVALID_ENVELOPE'],
    [new PayloadConflictError('SO1', 'fp-a', 'fp-b', 'MSG-A'), 'permanent', 'PAYLOAD_CONFLICT'],
    [new IllegalTransitionError('FINISHED before PAID'), 'permanent', 'ILLEGAL_TRANSITION'],
    [new WriteRejectedError('condition failed'), 'permanent', 'WRITE_REJECTED'],
    [new LeaseHeldError('SO1', 0), 'transient', 'LEASE_HELD'],
    [new NotYetApplicableError('order not created yet'), 'transient', 'NOT_YET_APPLICABLE'],
    [new TransientFailureError('slow'), 'transient', 'TRANSIENT'],
    [new LeaseLostError('taken over'), 'transient', 'LEASE_LOST'],
  ])('%s is %s with code %s', (error, classification, code) => {
    expect(error).toBeInstanceOf(ConsumptionError);
    expect(error.classification).toBe(classification);
    expect(error.code).toBe(code);
  });

  it('asks no retry delay of its own, except a held lease, which asks to wait until it ends', () => {
    expect(new TransientFailureError('slow').retryNotBefore).toBeUndefined();
    expect(new LeaseHeldError('SO1', 1_700_000_000_000).retryNotBefore).toBe(1_700_000_000_000);
    expect(new LeaseHeldError('SO1', 1_700_000_000_000).message).toBe(
      'key SO1 is being processed by another invocation until 2023-11-14T22:13:20.000Z',
    );
  });

  it('names the first msgId of a conflicting key, or says it is unknown', () => {
    expect(new PayloadConflictError('SO1', 'fp-a', 'fp-b', 'MSG-A').message).toBe(
      'key SO1 was first consumed with different content (msgId MSG-A)',
    );
    expect(new PayloadConflictError('SO1', 'fp-a', 'fp-b', undefined).message).toBe(
      'key SO1 was first consumed with different content (msgId unknown)',
    );
  });
});

describe('classify', () => {
  it('returns a classified error as it is', () => {
    const error = new InvalidPayloadError('bad points');
    expect(classify(error)).toBe(error);
  });

  it.each([
    'ProvisionedThroughputExceededException',
    'ThrottlingException',
    'RequestLimitExceeded',
    'InternalServerError',
    'ServiceUnavailable',
    'TransactionInProgressException',
    'TimeoutError',
    'RequestTimeout',
  ])('takes the AWS error %s as transient under its own name', (name) => {
    // Prepare
    const error = serviceError(name, 'try again later');
    // Act
    const classified = classify(error);
    // Assess
    expect(classified).toBeInstanceOf(TransientFailureError);
    expect(classified).toMatchObject({ classification: 'transient', code: name, message: 'try again later' });
    expect(classified.cause).toBe(error);
  });

  it('takes any other error as transient UNEXPECTED_ERROR, keeping its name in the message', () => {
    const error = new TypeError("Cannot read properties of undefined (reading 'points')");
    expect(classify(error)).toMatchObject({
      classification: 'transient',
      code: 'UNEXPECTED_ERROR',
      message: "TypeError: Cannot read properties of undefined (reading 'points')",
      cause: error,
    });
    expect(classify(serviceError('ValidationException', 'bad key'))).toMatchObject({
      code: 'UNEXPECTED_ERROR',
      message: 'ValidationException: bad key',
    });
  });

  it.each([
    ['a string', 'socket hang up', 'Error: socket hang up'],
    ['undefined', undefined, 'Error: undefined'],
    ['an object', { status: 503 }, 'Error: [object Object]'],
  ])('takes a thrown value that is not an Error (%s) as transient UNEXPECTED_ERROR', (_name, thrown, message) => {
    expect(classify(thrown)).toMatchObject({
      classification: 'transient',
      code: 'UNEXPECTED_ERROR',
      message,
      cause: thrown,
    });
  });
});
