/**
 * Named failures of the DingTalk alarm notifier. The handler decides from the class alone whether
 * an invocation should fail (so Lambda retries it and, in the end, parks it in the notifier's DLQ)
 * and which metric to raise; messages never contain the webhook access token or the signing secret.
 */

/** Common base so callers can tell notifier failures from programming errors. */
export class DingTalkError extends Error {
  override readonly name: string = 'DingTalkError';
}

/** DingTalk answered with an errcode that retrying cannot fix (security check, bad token, rejected content). */
export class RobotRejectedError extends DingTalkError {
  override readonly name: string = 'RobotRejectedError';
  constructor(
    readonly errcode: number,
    readonly errmsg: string,
    readonly kind: 'configuration' | 'content',
  ) {
    super(`DingTalk rejected the message (${kind}): errcode ${errcode}, errmsg ${JSON.stringify(errmsg)}`);
  }
}

/** 410100/130101: the robot is over its 20 messages a minute and bans itself for 10 minutes. */
export class RobotThrottledError extends DingTalkError {
  override readonly name: string = 'RobotThrottledError';
  constructor(
    readonly errcode: number,
    readonly errmsg: string,
  ) {
    super(`DingTalk throttled the robot: errcode ${errcode}, errmsg ${JSON.stringify(errmsg)}`);
  }
}

/** Network failure, timeout, HTTP 5xx or an unknown errcode: worth another attempt later. */
export class RobotUnavailableError extends DingTalkError {
  override readonly name: string = 'RobotUnavailableError';
  constructor(
    message: string,
    readonly errcode?: number,
    readonly errmsg?: string,
  ) {
    super(message);
  }
}

/** Retries inside one invocation are used up; failing the invocation hands the alarm to Lambda's retries. */
export class DeliveryBudgetExhaustedError extends DingTalkError {
  override readonly name: string = 'DeliveryBudgetExhaustedError';
  constructor(
    message: string,
    readonly lastError?: DingTalkError,
  ) {
    super(message);
  }
}

/** The webhook secret is missing or does not have the documented JSON shape. */
export class WebhookSecretError extends DingTalkError {
  override readonly name: string = 'WebhookSecretError';
}

/** Required configuration (environment) is missing or invalid. */
export class NotifierConfigurationError extends DingTalkError {
  override readonly name: string = 'NotifierConfigurationError';
}
