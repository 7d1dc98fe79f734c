import {
  endpointRefusal,
  OUTSIDE_SERVICES,
  type OutsideServiceName,
  type ServiceAuth,
  SIGV4_SERVICES,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { z } from 'zod';
import type { ProtectedSecret } from './protected-secret.ts';

/**
 * How a stage reaches one outside service (`services.<name>` in the stage settings): its URL and
 * how each call proves who is calling. A plain URL, the earlier form, still parses and means
 * `auth: {kind: 'none'}`, which only a loopback stand-in may have: a deployed stage states its auth.
 */
export const serviceSettingSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { url: value, auth: { kind: 'none' } } : value),
  z.strictObject({
    url: z.url(),
    auth: z.discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('none') }),
      /** A secret whose SecretString is the token; the function may read that secret and no other. */
      z.strictObject({
        kind: z.literal('bearer'),
        secretName: z.string().regex(/^[\w/+=.@-]{1,512}$/, 'a Secrets Manager secret name'),
      }),
      /**
       * The function's role signs; it may invoke `resourceArn` alone: the API method
       * (`arn:aws:execute-api:<region>:<account>:<api-id>/<stage>/POST/<path>`, derived from an
       * execute-api URL) or the function behind a function URL (never derivable from the URL).
       */
      z.strictObject({
        kind: z.literal('sigv4'),
        service: z.enum(SIGV4_SERVICES),
        resourceArn: z.string().startsWith('arn:').optional(),
      }),
    ]),
  }),
);
export type ServiceSetting = z.infer<typeof serviceSettingSchema>;

/** A setting the group needs is missing or cannot be used; the message names the setting. */
export class ServiceSettingError extends Error {
  override readonly name = 'ServiceSettingError';
  constructor(
    readonly setting: string,
    readonly group: string,
    problem: string,
  ) {
    super(`${group}: ${setting} ${problem}`);
  }
}

/** What the function gets for one outside service: its environment, and the one permission its calls need. */
export interface ServiceAccess {
  readonly environment: Record<string, string>;
  /** The TCP port calls go to (a VPC-placed function's security group lets it out). */
  readonly port: number;
  grant(role: iam.IRole): void;
}

const EXECUTE_API_HOST = /^([a-z0-9]+)\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/;
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/;
const EXECUTE_API_ARN = /^arn:aws[a-z-]*:execute-api:([a-z0-9-]+):\d{12}:([a-z0-9]+)\/[^/]+\/[A-Z*]+\/.*$/;
const FUNCTION_ARN = /^arn:aws[a-z-]*:lambda:([a-z0-9-]+):\d{12}:function:[\w-]+(?::[\w$-]+)?$/;

/**
 * The environment and the grant for `name` as the stage sets it, refused with the setting named
 * when it is missing, calls without credentials or in clear off loopback (the rule the function
 * applies at cold start), or states a fact twice with two values (the URL's host and the ARN).
 */
export function serviceAccess(
  scope: Construct,
  name: OutsideServiceName,
  group: string,
  setting: ServiceSetting | undefined,
  /** The stack's own secret for a bearer service (`serviceSecret`); without it, the named secret as it exists. */
  token?: ProtectedSecret,
): ServiceAccess {
  const path = `services.${name}`;
  if (!setting) throw new ServiceSettingError(path, group, 'is not set');
  const refusal = endpointRefusal(setting);
  if (refusal) throw new ServiceSettingError(path, group, refusal);
  const url = new URL(setting.url);
  const { auth, grant } = authorisation(scope, name, group, url, setting.auth, token);
  const service = OUTSIDE_SERVICES[name];
  return {
    environment: {
      [service.env]: setting.url,
      ...(auth.kind === 'none' ? {} : { [service.authEnv]: JSON.stringify(auth) }),
    },
    port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
    grant,
  };
}

function authorisation(
  scope: Construct,
  name: OutsideServiceName,
  group: string,
  url: URL,
  setting: ServiceSetting['auth'],
  token: ProtectedSecret | undefined,
): { auth: ServiceAuth; grant: (role: iam.IRole) => void } {
  const refuse = (field: string, problem: string) =>
    new ServiceSettingError(`services.${name}.${field}`, group, problem);
  switch (setting.kind) {
    case 'none':
      return { auth: setting, grant: () => undefined };
    case 'bearer': {
      if (token)
        return { auth: { kind: 'bearer', secretId: setting.secretName }, grant: (role) => token.grantRead(role) };
      const secret = secretsmanager.Secret.fromSecretNameV2(scope, `${name}-token`, setting.secretName);
      return { auth: { kind: 'bearer', secretId: setting.secretName }, grant: (role) => secret.grantRead(role) };
    }
    case 'sigv4': {
      const { region, resourceArn, actions } =
        setting.service === 'execute-api'
          ? executeApiTarget(scope, name, url, setting.resourceArn, refuse)
          : functionUrlTarget(url, setting.resourceArn, refuse);
      return {
        auth: { kind: 'sigv4', service: setting.service, region },
        grant: (role) => {
          for (const statement of actions)
            role.addToPrincipalPolicy(new iam.PolicyStatement({ ...statement, resources: [resourceArn] }));
        },
      };
    }
  }
}

type Refuse = (field: string, problem: string) => ServiceSettingError;
type Target = {
  region: string;
  resourceArn: string;
  actions: Array<{ actions: string[]; conditions?: Record<string, unknown> }>;
};

/**
 * An API Gateway API with IAM authorisation. Its default endpoint names the API and the region,
 * and its path the stage (none: `$default`), so the method's ARN follows from the URL; behind a
 * custom domain it does not, and `resourceArn` must say it.
 */
function executeApiTarget(
  scope: Construct,
  name: OutsideServiceName,
  url: URL,
  given: string | undefined,
  refuse: Refuse,
): Target {
  const host = EXECUTE_API_HOST.exec(url.hostname);
  const call = OUTSIDE_SERVICES[name].call;
  const actions = [{ actions: ['execute-api:Invoke'] }];
  if (given !== undefined) {
    const arn = EXECUTE_API_ARN.exec(given);
    if (!arn)
      throw refuse(
        'auth.resourceArn',
        'is not an execute-api method ARN (arn:aws:execute-api:<region>:<account>:<api-id>/<stage>/POST/<path>)',
      );
    const region = arn[1]!;
    const apiId = arn[2]!;
    if (host && (host[1] !== apiId || host[2] !== region)) {
      throw refuse(
        'auth.resourceArn',
        `names API ${apiId} in ${region} but services.${name}.url is API ${host[1]} in ${host[2]}`,
      );
    }
    return { region, resourceArn: given, actions };
  }
  if (!host)
    throw refuse(
      'auth.resourceArn',
      `is required: ${url.hostname} is not an execute-api endpoint, so the API cannot be derived from the URL`,
    );
  const apiId = host[1]!;
  const region = host[2]!;
  const [stage = '$default', ...basePath] = url.pathname.split('/').filter(Boolean);
  const resourceName = `${stage}/${call.method}${basePath.map((p) => `/${p}`).join('')}${call.path}`;
  const resourceArn = Stack.of(scope).formatArn({
    service: 'execute-api',
    region,
    resource: apiId,
    resourceName,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
  return { region, resourceArn, actions };
}

/**
 * A Lambda function URL with AWS_IAM auth. Its host names the region but not the function, so
 * `resourceArn` is required. Function URLs created since October 2025 also need
 * lambda:InvokeFunction besides lambda:InvokeFunctionUrl.
 */
function functionUrlTarget(url: URL, given: string | undefined, refuse: Refuse): Target {
  const host = FUNCTION_URL_HOST.exec(url.hostname);
  if (!host)
    throw refuse(
      'url',
      `is not a Lambda function URL (<url-id>.lambda-url.<region>.on.aws), which sigv4 service 'lambda' signs for`,
    );
  if (given === undefined)
    throw refuse(
      'auth.resourceArn',
      'is required: the ARN of the function behind the function URL (the URL does not name it)',
    );
  const arn = FUNCTION_ARN.exec(given);
  if (!arn)
    throw refuse(
      'auth.resourceArn',
      'is not a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>[:<alias>])',
    );
  if (arn[1] !== host[1]) throw refuse('auth.resourceArn', `is in ${arn[1]} but the function URL is in ${host[1]}`);
  return {
    region: host[1]!,
    resourceArn: given,
    actions: [
      {
        actions: ['lambda:InvokeFunctionUrl'],
        conditions: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } },
      },
      // Unconditioned: invoking this one function directly is what the URL permission already allows.
      { actions: ['lambda:InvokeFunction'] },
    ],
  };
}
