import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RobotMessage } from '../../src/alarm-message.ts';
import { RobotUnavailableError } from '../../src/errors.ts';
import { RobotClient } from '../../src/robot-client.ts';

const servers: Server[] = [];

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler?.(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

const MESSAGE: RobotMessage = {
  msgtype: 'markdown',
  markdown: { title: 'ALARM', text: 'ALARM' },
  at: { atMobiles: [], isAtAll: false },
};

describe('the DingTalk robot client never follows a redirect', () => {
  it.each([301, 302, 307, 308])(
    'on %i: the signed URL (access token, signature) goes nowhere else, and the send fails as transient',
    async (status) => {
      // Prepare: a robot endpoint that redirects to another server
      const elsewhere = await listen((_, res) => res.end('{"errcode":0,"errmsg":"ok"}'));
      const robot = await listen((_, res) => {
        res.writeHead(status, { location: `${elsewhere.url}/collect` });
        res.end();
      });
      const client = new RobotClient({ clock: { now: () => 1_700_000_000_000, sleep: async () => undefined } });

      // Act
      const sent = client.send({ webhookUrl: `${robot.url}/robot/send?access_token=T0KEN`, secret: 'SECx' }, MESSAGE);

      // Assert: refused with the status named, and the other server saw nothing
      await expect(sent).rejects.toThrow(RobotUnavailableError);
      await expect(sent).rejects.toThrow(`DingTalk answered HTTP ${status} (a redirect, not followed)`);
      expect(robot.requests).toHaveLength(1);
      expect(elsewhere.requests).toEqual([]);
    },
  );
});
