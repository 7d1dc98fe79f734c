import { runBridgeProcess } from './bridge-process.ts';

await runBridgeProcess();
