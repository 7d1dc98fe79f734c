import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidPayloadError } from '../../../src/consumer/failures/errors.ts';
import { parseJsonPayload } from '../../../src/consumer/json-payload.ts';

const order = z.object({ orderNo: z.string() });

describe('parseJsonPayload', () => {
  it('reads a body that starts with a byte-order mark, as Java consumers’ JSON parsers do', () => {
    expect(parseJsonPayload(order, '\uFEFF{"orderNo":"SO-BOM"}')).toEqual({ orderNo: 'SO-BOM' });
    expect(parseJsonPayload(order, '{"orderNo":"SO-1"}')).toEqual({ orderNo: 'SO-1' });
  });

  it('still refuses a mark anywhere else, and a body that is only the mark', () => {
    expect(() => parseJsonPayload(order, '{"orderNo":"SO-1"}\uFEFF')).toThrow(InvalidPayloadError);
    expect(() => parseJsonPayload(order, '\uFEFF')).toThrow('body is not JSON');
  });
});
