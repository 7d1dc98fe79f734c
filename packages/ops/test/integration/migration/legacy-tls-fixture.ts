import { mkdtemp, writeFile } from 'node:fs/promises';
import { connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { generate } from 'selfsigned';

/** A certificate for this machine (127.0.0.1, localhost), self-signed: its own CA. Files for servers and `--legacy-ca`. */
export interface TestCertificate {
  readonly cert: string;
  readonly key: string;
  readonly certFile: string;
  readonly keyFile: string;
}

export async function loopbackCertificate(name: string): Promise<TestCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'legacy-tls-'));
  const pems = await generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' },
        ],
      },
    ],
  });
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  await writeFile(certFile, pems.cert);
  await writeFile(keyFile, pems.private, { mode: 0o600 });
  return { cert: pems.cert, key: pems.private, certFile, keyFile };
}

/**
 * TLS on loopback in front of a plain TCP server (the local redis-server may be built without
 * TLS): what a managed Redis with TLS looks like to a client.
 */
export async function tlsTerminator(
  certificate: TestCertificate,
  targetPort: number,
): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createTlsServer({ cert: certificate.cert, key: certificate.key }, (client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.once('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
