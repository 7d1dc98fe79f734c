import { describe, expect, it } from 'vitest';
import { inlineText, quotedBlock } from '../../src/markdown-text.ts';

/** What a markdown renderer or a client's auto-linker acts on, per case. */
const HOST = /[\p{L}\p{N}][.\u3002\uff0e\uff61][\p{L}\p{N}]/u;
const ENTITY = /&#?[a-z0-9]+;/i;

describe('untrusted text in DingTalk markdown', () => {
  it.each([
    ['a bare domain', 'see evil.example.com/steal now', HOST, 'see evil․example․com/steal now'],
    ['a bare IP address with a path', 'fetch 10.0.0.1:8080/x', HOST, 'fetch 10․0․0․1:8080/x'],
    ['a domain with ideographic full stops', 'evil。example．com', HOST, 'evil․example․com'],
    ['an e-mail address', 'write to ops@evil.example', HOST, 'write to ops@evil․example'],
    ['a mailto: link', 'mailto:ops@evil', /mailto:/i, 'mailto꞉ops@evil'],
    ['a MAILTO: link in capitals', 'MAILTO:ops@evil', /mailto:/i, 'MAILTO꞉ops@evil'],
    ['a tel: link', 'tel:+8613800000000', /tel:/i, 'tel꞉+8613800000000'],
    [
      'named HTML entities',
      '&lt;font color=red&gt;boom&lt;/font&gt;',
      ENTITY,
      '＆lt;font color=red＆gt;boom＆lt;/font＆gt;',
    ],
    ['numeric HTML entities', '&#60;a href=x&#x3E;', ENTITY, '＆#60;a href=x＆#x3E;'],
    ['_ emphasis', '_urgent_ and __bold__', /_/, 'ˍurgentˍ and ˍˍboldˍˍ'],
    ['intraword _', 'point_consumer_group', /_/, 'pointˍconsumerˍgroup'],
  ])('makes %s inert', (_name, input, active, expected) => {
    // Prepare: the input really carries what the case is about
    expect(input).toMatch(active);
    // Act
    const inline = inlineText(input);
    const block = quotedBlock(input);
    // Assess
    expect(inline).toBe(expected);
    expect(inline).not.toMatch(active);
    expect(block).not.toMatch(active);
  });

  it('leaves ordinary prose alone: sentence ends, times, dashes', () => {
    const text = 'Threshold Crossed: 1 out of the last 1 datapoints at 17:43. See the runbook - section DLQ.';
    expect(inlineText(text)).toBe(text);
  });
});
