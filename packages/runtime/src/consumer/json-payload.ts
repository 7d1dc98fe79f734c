import { z } from 'zod';
import { InvalidPayloadError } from './failures/errors.ts';

/**
 * A business identifier (order number, user id): printable ASCII, 1–64 characters, so keys stay small and unambiguous.
 */
export const identifier = (what: string) =>
  z
    .string()
    .trim()
    .min(1, `${what} is empty`)
    .max(64, `${what} is longer than 64 characters`)
    .regex(/^[\x21-\x7E]+$/, `${what} must be printable ASCII without spaces`);

/**
 * Producers send user ids as numbers or strings; both become the same string key. A number
 * above 2^53 − 1 has already lost digits in JSON.parse (12345678901234567890 reads as
 * …567000), so it is refused rather than awarded to a neighbour's id: send such ids as strings.
 */
const numericUserId = z
  .number()
  .int({
    error: (issue) =>
      issue.code === 'too_big'
        ? 'userId above 2^53 - 1 loses digits as a JSON number: send it as a string'
        : 'userId must be a whole number',
  })
  .nonnegative('userId must not be negative');
export const userIdSchema = z.union([z.string(), numericUserId]).transform(String).pipe(identifier('userId'));

/**
 * Parses a message body as JSON and validates it; any problem is an `InvalidPayloadError` naming the first bad field.
 * A leading byte-order mark is skipped, as RFC 8259 allows and Java consumers' parsers (fastjson, Jackson) do: the
 * envelope keeps the producer's bytes, mark included, and `JSON.parse` alone would refuse them.
 */
export function parseJsonPayload<S extends z.ZodType>(schema: S, body: string): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(body.startsWith(BYTE_ORDER_MARK) ? body.slice(1) : body);
  } catch {
    throw new InvalidPayloadError('body is not JSON');
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new InvalidPayloadError(`${issue.path.join('.') || 'body'}: ${issue.message}`);
  }
  return result.data;
}

const BYTE_ORDER_MARK = '\uFEFF';
