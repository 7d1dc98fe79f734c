import { createServer, type Server } from 'node:http';
import type { BridgeStatus } from './bridge.ts';

/**
 * `GET /health/live`: the process answers (restart it if not). `GET /health/ready`: every route's
 * consumer is running (503 while starting or draining). Both return the status JSON with per-route
 * counters. Bound to loopback by default: the ECS container health check runs inside the task.
 */
export class HealthServer {
  #server: Server | undefined;

  constructor(private readonly status: () => BridgeStatus) {}

  async listen(port: number, host: string): Promise<number> {
    const server = createServer((req, res) => {
      const status = this.status();
      const path = (req.url ?? '').split('?')[0];
      const code = path === '/health/live' ? 200 : path === '/health/ready' ? (status.ready ? 200 : 503) : 404;
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(code === 404 ? '{"error":"not found"}' : JSON.stringify(status));
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return (server.address() as { port: number }).port;
  }

  close(): Promise<void> {
    const server = this.#server;
    if (!server) return Promise.resolve();
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
