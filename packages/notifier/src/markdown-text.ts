/**
 * Making untrusted text (alarm names, descriptions, reasons, whole foreign messages) inert inside
 * a DingTalk markdown message.
 *
 * DingTalk does not document backslash escapes for its markdown subset, so a backslash could show up
 * literally or be ignored. Instead, the characters that build links, images, HTML, emphasis and
 * code are replaced by look-alike Unicode characters that no markdown renderer interprets, and URL
 * schemes and host names are broken so clients do not auto-link them. The text stays readable; it can
 * no longer open a link (`https://…`, `mailto:…`, a bare `evil.example.com`), inject a `<font>`/`<a>`
 * tag (also not as `&lt;` entities) or restructure the message. `_` is replaced too although queue
 * names are full of it: DingTalk does not document whether intraword `_` emphasises, and an
 * underlined look-alike reads the same. `-` is kept: inside a line it forms nothing.
 */

const INLINE_REPLACEMENTS: Record<string, string> = {
  '\\': '＼',
  _: 'ˍ',
  '&': '＆',
  '`': 'ˋ',
  '*': '∗',
  '[': '［',
  ']': '］',
  '<': '＜',
  '>': '＞',
  '~': '～',
  '|': '｜',
};

const INLINE = /[\\_&`*[\]<>~|]/g;
// Schemes (`https://`, `dingtalk://`, `javascript:`, `mailto:`) are what clients auto-link.
// Linear-time on purpose: a scheme pattern like [a-z]+: backtracks quadratically on long words.
const SCHEME = /:(?=\/\/)|\b(javascript|data|vbscript|mailto|tel|sms|file):/gi;
// A dot between two letters or digits makes a host name (`evil.example.com`, `10.0.0.1`, the domain
// of `a@evil.example`) that clients link without any scheme; so do the dots IDNA reads as one.
// One dot leader (U+2024) looks the same and no URL parser accepts it in a host.
const HOST_DOT = /(?<=[\p{L}\p{N}])[.\u3002\uff0e\uff61](?=[\p{L}\p{N}])/gu;
// A line that starts with one of these becomes a heading, list, quote or rule.
const LINE_START_MARKER = /^(#|-|\+|=|\d+[.)])/;
const LINE_START_REPLACEMENT: Record<string, string> = { '#': '＃', '-': '－', '+': '＋', '=': '＝' };
// biome-ignore lint/suspicious/noControlCharactersInRegex: control and bidi characters are what it removes
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g;

function inert(text: string): string {
  return text
    .replace(CONTROL, '')
    .replace(INLINE, (c) => INLINE_REPLACEMENTS[c] ?? c)
    .replace(SCHEME, (_m, bare: string | undefined) => `${bare ?? ''}꞉`)
    .replace(HOST_DOT, '․');
}

function inertLineStart(line: string): string {
  return line.replace(
    LINE_START_MARKER,
    (marker: string) => LINE_START_REPLACEMENT[marker] ?? marker.replace(/[.)]$/, (p) => (p === '.' ? '．' : '）')),
  );
}

/** For values shown inside a line (names, dimension values): one line, no markup. */
export function inlineText(text: string): string {
  return inert(text.replace(/\s+/g, ' ').trim());
}

/** For free text (descriptions, reasons, foreign messages): keeps line breaks, each line a quote line. */
export function quotedBlock(text: string): string {
  const lines = text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    // Leading spaces would turn a line into a code block.
    .map((line) => inertLineStart(inert(line.trim())))
    .filter((line, i, all) => line !== '' || (i > 0 && all[i - 1] !== ''));
  // DingTalk needs two trailing spaces for a hard line break inside a paragraph.
  return lines.map((line) => `> ${line}`).join('  \n');
}

/** Cuts to `maxChars` code points (never inside a surrogate pair) and says how much was cut. */
export function truncateText(text: string, maxChars: number): string {
  const chars = Array.from(text);
  if (chars.length <= maxChars) return text;
  const omitted = chars.length - maxChars;
  return `${chars.slice(0, Math.max(0, maxChars)).join('')} … [${omitted} characters truncated]`;
}

export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
