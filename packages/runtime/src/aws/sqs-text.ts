/**
 * Text SQS accepts in a message attribute (and a body): SQS refuses a request whose text
 * holds any character outside #x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF,
 * and a lone surrogate (what `slice()` leaves when it cuts an emoji in half) cannot even
 * be encoded. One refused attribute fails the whole send: a dead letter that cannot be
 * written keeps its record in the source queue and its key RETRYABLE, so every value the
 * project writes into an attribute passes through here first.
 */

/** A character SQS refuses, or half of a surrogate pair; each becomes U+FFFD. */
function isRefused(codePoint: number): boolean {
  if (codePoint === 0x9 || codePoint === 0xa || codePoint === 0xd) return false;
  if (codePoint < 0x20) return true;
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) return true; // a lone surrogate: iteration yields pairs whole
  return codePoint === 0xfffe || codePoint === 0xffff;
}

/**
 * `value` made acceptable to SQS and at most `maxChars` code points long (cut ones end in
 * `…`). Cutting counts code points, so a surrogate pair is never split.
 */
export function sqsText(value: string, maxChars: number): string {
  const out: string[] = [];
  for (const char of value) {
    if (out.length === maxChars) {
      out[maxChars - 1] = '…';
      break;
    }
    out.push(isRefused(char.codePointAt(0)!) ? '\uFFFD' : char);
  }
  return out.join('');
}
