/**
 * How a consumer reaches an outside service (`OUTSIDE_SERVICES`): its base URL and how each call
 * proves who is calling. The CDK app derives both from the stage settings and writes them into
 * the function's environment; the function reads them back and refuses, at cold start, what the
 * synth refuses too (`endpointRefusal`).
 */
import { z } from 'zod';
import { isLoopbackUrl } from './loopback-url.ts';

/** AWS services whose endpoints authorise a call by its SigV4 signature (IAM), by signing name. */
export const SIGV4_SERVICES = ['execute-api', 'lambda'] as const;
export type SigV4Service = (typeof SIGV4_SERVICES)[number];

/** As the function's environment states it (`<SERVICE>_AUTH`, JSON); absent means `none`. */
export const serviceAuthSchema = z.discriminatedUnion('kind', [
  /** No credentials: only for a loopback stand-in. */
  z.strictObject({ kind: z.literal('none') }),
  /** `Authorization: Bearer <token>`, the token being the whole SecretString of this secret. */
  z.strictObject({ kind: z.literal('bearer'), secretId: z.string().min(1) }),
  /** Signed with the function's own credentials for an API Gateway API or a Lambda function URL (AWS_IAM). */
  z.strictObject({
    kind: z.literal('sigv4'),
    service: z.enum(SIGV4_SERVICES),
    region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/),
  }),
]);
export type ServiceAuth = z.infer<typeof serviceAuthSchema>;

export interface ServiceEndpoint {
  readonly url: string;
  readonly auth: ServiceAuth;
}

/**
 * Why calls to this endpoint are refused, or undefined. A token or a signature sent over plain
 * http can be read and replayed on the way, and a service that takes calls without credentials
 * serves whoever reaches it; both are accepted only on a loopback host, where the local
 * stand-ins listen. Decided by the URL alone, so no setting can relax it in a deployed stage.
 */
export function endpointRefusal(endpoint: {
  readonly url: string;
  readonly auth: Pick<ServiceAuth, 'kind'>;
}): string | undefined {
  const url = URL.parse(endpoint.url);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) return 'must be an http(s) URL';
  // fetch refuses such a URL anyway; refusing it here keeps a password out of settings and environment.
  if (url.username || url.password) return 'must not carry credentials in the URL (give them as auth)';
  if (isLoopbackUrl(endpoint.url)) return undefined;
  if (url.protocol !== 'https:') return 'must use https (plain http only for a loopback stand-in)';
  if (endpoint.auth.kind === 'none')
    return "needs credentials (auth 'bearer' or 'sigv4'); auth 'none' is for a loopback stand-in only";
  return undefined;
}
