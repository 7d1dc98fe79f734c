// Run by packages/bridge/Dockerfile's build stage on the image's own Node: the root filesystem in the build
// context (.bridge-image/rootfs/, made by `npm run bridge:rootfs`) must be the one this commit's
// packages/bridge/image/rootfs.lock.json describes, so a stale one fails the build instead of shipping.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const [lockFile, recorded] = process.argv.slice(2);
const expected = createHash('sha256').update(readFileSync(lockFile)).digest('hex');
const actual = readFileSync(recorded, 'utf8').trim();
if (actual !== expected) {
  console.error(
    `the root filesystem was made from a lock with sha256 ${actual}, not ${lockFile} (${expected}): run npm run bridge:rootfs`,
  );
  process.exit(1);
}
