import { consumerGroup } from '@rocketmq-lambda/runtime/config/index.ts';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { tuningOf } from '../src/consumer-group.ts';
import { RocketMQConsumersStack } from '../src/consumer-stack.ts';
import {
  type ServiceSetting,
  ServiceSettingError,
  serviceAccess,
  serviceSettingSchema,
} from '../src/outside-service.ts';

const COUPONS = consumerGroup('coupon-consumer-group');
const BEARER: ServiceSetting = {
  url: 'https://coupons.example.com',
  auth: { kind: 'bearer', secretName: 'unit/coupon-service-token' },
};

function synth(props: Partial<ConstructorParameters<typeof RocketMQConsumersStack>[2]>) {
  const app = new App();
  return new RocketMQConsumersStack(app, 'Consumers', {
    prefix: 'unit',
    runbookUrl: 'https://example.com/runbook.md',
    groups: [COUPONS],
    env: { account: '123456789012', region: 'ap-northeast-1' },
    ...props,
  });
}
const couponService = (setting: ServiceSetting) => synth({ services: { 'coupon-service': setting } });

function couponFunction(template: Template) {
  return Object.values(template.findResources('AWS::Lambda::Function')).find(
    (f) => f.Properties.Environment?.Variables?.CONSUMER_GROUP === COUPONS.group,
  )!;
}

/**
 * The coupon function's statements other than logs, tables, queues, the envelope signing key and the stage's data key
 * (every consumer uses those): what its outside calls may do.
 */
function callStatements(template: Template) {
  const roleId = couponFunction(template).Properties.Role['Fn::GetAtt'][0];
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement)
    .filter((s: { Action: string | string[] }) =>
      [s.Action].flat().some((a) => /^(secretsmanager|execute-api|lambda|kms):/.test(a)),
    )
    .flatMap((s: { Resource: unknown }) => {
      // IAM policy minimisation merges grants that differ only by resource: take the two keys' out of each.
      const own = [s.Resource].flat().filter((r) => !/EnvelopeSigningKey|DataKey/.test(JSON.stringify(r)));
      if (own.length === 0) return [];
      return [{ ...s, Resource: own.length === 1 ? own[0] : own }];
    });
}

describe('a group takes its outside services and sizing from the catalogue and the stage, never from special cases', () => {
  it('refuses a stage without a service the group calls, naming group and setting', () => {
    expect(() => synth({})).toThrow('coupon-consumer-group: services.coupon-service is not set');
  });

  it('gives the function the service URL and the stage’s per-group sizing over the catalogue and stage-wide values', () => {
    const stack = synth({
      services: { 'coupon-service': BEARER },
      tuning: { maxConcurrency: 5, batchSize: 4 },
      groupTuning: { [COUPONS.group]: tuningOf({ maxConcurrency: 40, timeoutSeconds: 20 }) },
    });
    const template = Template.fromStack(stack);
    const fn = couponFunction(template);
    expect(fn.Properties.Environment.Variables.COUPON_SERVICE_URL).toBe('https://coupons.example.com');
    expect(fn.Properties.Timeout).toBe(20);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 4,
      ScalingConfig: { MaximumConcurrency: 40 },
    });
  });
});

describe('the coupon call’s credentials, from the stage settings', () => {
  it('bearer: names the secret in the environment, and the function may read that secret (and decrypt it) and no other', () => {
    const template = Template.fromStack(couponService(BEARER));
    expect(JSON.parse(couponFunction(template).Properties.Environment.Variables.COUPON_SERVICE_AUTH)).toEqual({
      kind: 'bearer',
      secretId: 'unit/coupon-service-token',
    });
    const [tokenId, ...others] = Object.keys(
      template.findResources('AWS::SecretsManager::Secret', { Properties: { Name: 'unit/coupon-service-token' } }),
    );
    expect(others).toEqual([]);
    const keyId = template.findResources('AWS::SecretsManager::Secret')[tokenId!]!.Properties.KmsKeyId['Fn::GetAtt'][0];
    expect(callStatements(template)).toEqual([
      {
        Effect: 'Allow',
        Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
        Resource: { Ref: tokenId },
      },
    ]);
    // The token's own key lets the function decrypt, and only through Secrets Manager.
    const roleId = couponFunction(template).Properties.Role['Fn::GetAtt'][0];
    expect(template.findResources('AWS::KMS::Key')[keyId]!.Properties.KeyPolicy.Statement).toContainEqual({
      Effect: 'Allow',
      Principal: { AWS: { 'Fn::GetAtt': [roleId, 'Arn'] } },
      Action: 'kms:Decrypt',
      Resource: '*',
      Condition: { StringEquals: { 'kms:ViaService': 'secretsmanager.ap-northeast-1.amazonaws.com' } },
    });
  });

  it('sigv4 to an execute-api endpoint: derives the region and may invoke exactly the grant method of that API and stage', () => {
    const template = Template.fromStack(
      couponService({
        url: 'https://a1b2c3d4e5.execute-api.ap-northeast-1.amazonaws.com/prod',
        auth: { kind: 'sigv4', service: 'execute-api' },
      }),
    );
    expect(JSON.parse(couponFunction(template).Properties.Environment.Variables.COUPON_SERVICE_AUTH)).toEqual({
      kind: 'sigv4',
      service: 'execute-api',
      region: 'ap-northeast-1',
    });
    expect(callStatements(template)).toEqual([
      {
        Effect: 'Allow',
        Action: 'execute-api:Invoke',
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':execute-api:ap-northeast-1:123456789012:a1b2c3d4e5/prod/POST/v1/coupon-grants',
            ],
          ],
        },
      },
    ]);
  });

  it('sigv4 behind a custom domain: takes the method ARN as given, and its region for signing', () => {
    const resourceArn = 'arn:aws:execute-api:ap-southeast-1:210987654321:z9y8x7w6v5/live/POST/v1/coupon-grants';
    const template = Template.fromStack(
      couponService({
        url: 'https://coupons.example.com',
        auth: { kind: 'sigv4', service: 'execute-api', resourceArn },
      }),
    );
    expect(JSON.parse(couponFunction(template).Properties.Environment.Variables.COUPON_SERVICE_AUTH)).toMatchObject({
      region: 'ap-southeast-1',
    });
    expect(callStatements(template)).toEqual([
      { Effect: 'Allow', Action: 'execute-api:Invoke', Resource: resourceArn },
    ]);
  });

  it('sigv4 to a function URL: may invoke that function through its URL (InvokeFunctionUrl with AWS_IAM, and InvokeFunction) and nothing else', () => {
    const resourceArn = 'arn:aws:lambda:ap-northeast-1:210987654321:function:coupon-service:live';
    const template = Template.fromStack(
      couponService({
        url: 'https://abcdefghij0123456789abcdefghij01.lambda-url.ap-northeast-1.on.aws/',
        auth: { kind: 'sigv4', service: 'lambda', resourceArn },
      }),
    );
    expect(JSON.parse(couponFunction(template).Properties.Environment.Variables.COUPON_SERVICE_AUTH)).toEqual({
      kind: 'sigv4',
      service: 'lambda',
      region: 'ap-northeast-1',
    });
    expect(callStatements(template)).toEqual([
      {
        Effect: 'Allow',
        Action: 'lambda:InvokeFunctionUrl',
        Resource: resourceArn,
        Condition: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } },
      },
      { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: resourceArn },
    ]);
  });

  it.each([
    [
      'a plain URL (the earlier form: no credentials)',
      'https://coupons.example.com',
      'services.coupon-service needs credentials',
    ],
    [
      'credentials none off loopback',
      { url: 'https://coupons.example.com', auth: { kind: 'none' } },
      "auth 'none' is for a loopback stand-in only",
    ],
    [
      'a token over plain http',
      { ...BEARER, url: 'http://coupons.example.com' },
      'services.coupon-service must use https',
    ],
    [
      'an execute-api ARN that names another API than the URL',
      {
        url: 'https://a1b2c3d4e5.execute-api.ap-northeast-1.amazonaws.com/prod',
        auth: {
          kind: 'sigv4',
          service: 'execute-api',
          resourceArn: 'arn:aws:execute-api:ap-northeast-1:123456789012:zzzzzzzzzz/prod/POST/v1/coupon-grants',
        },
      },
      'services.coupon-service.auth.resourceArn names API zzzzzzzzzz in ap-northeast-1 but services.coupon-service.url is API a1b2c3d4e5 in ap-northeast-1',
    ],
    [
      'a custom domain without the API’s ARN',
      { url: 'https://coupons.example.com', auth: { kind: 'sigv4', service: 'execute-api' } },
      'services.coupon-service.auth.resourceArn is required',
    ],
    [
      'a function URL without the function’s ARN',
      { url: 'https://abc.lambda-url.ap-northeast-1.on.aws', auth: { kind: 'sigv4', service: 'lambda' } },
      'services.coupon-service.auth.resourceArn is required',
    ],
    [
      'a function ARN in another region than its URL',
      {
        url: 'https://abc.lambda-url.ap-northeast-1.on.aws',
        auth: {
          kind: 'sigv4',
          service: 'lambda',
          resourceArn: 'arn:aws:lambda:us-east-1:123456789012:function:coupons',
        },
      },
      'is in us-east-1 but the function URL is in ap-northeast-1',
    ],
    [
      'sigv4 for lambda to a host that is no function URL',
      { url: 'https://coupons.example.com', auth: { kind: 'sigv4', service: 'lambda' } },
      'services.coupon-service.url is not a Lambda function URL',
    ],
  ] as const)('refuses %s at synth, naming the setting', (_, setting, message) => {
    const parsed = serviceSettingSchema.parse(setting);
    expect(() => serviceAccess(new Stack(), 'coupon-service', COUPONS.group, parsed)).toThrow(ServiceSettingError);
    expect(() => serviceAccess(new Stack(), 'coupon-service', COUPONS.group, parsed)).toThrow(message);
  });
});
