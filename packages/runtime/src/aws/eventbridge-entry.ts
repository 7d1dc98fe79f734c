/** EventBridge's limit on one PutEvents entry. */
export const EVENTBRIDGE_MAX_ENTRY_BYTES = 262_144;

/** An entry's size as EventBridge counts it: Source, DetailType and Detail in UTF-8, plus 14 bytes for Time. */
export function eventBridgeEntryBytes(source: string, detailType: string, detail: string): number {
  return Buffer.byteLength(source) + Buffer.byteLength(detailType) + Buffer.byteLength(detail) + 14;
}
