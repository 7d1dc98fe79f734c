import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Whether the URL points at this machine (BlockList also matches IPv4-mapped IPv6 such as
 * `[::ffff:127.0.0.1]`). Only the local stand-ins listen there, and a request to them never
 * leaves the machine: the one place plain http, or a call without credentials, is acceptable.
 */
export function isLoopbackUrl(text: string): boolean {
  const address = URL.parse(text)?.hostname.replace(/^\[|\]$/g, '');
  if (address === undefined) return false;
  const family = isIP(address);
  return address === 'localhost' || (family !== 0 && LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6'));
}
