/**
 * What each alarm means and what to do, in one place: alarm descriptions are built from it and
 * link to the matching section of docs/runbook.md (a test checks every anchor exists there).
 */
export interface RunbookEntry {
  /** Heading anchor in docs/runbook.md. */
  readonly anchor: string;
  readonly happened: string;
  readonly action: string;
}

export const RUNBOOK = {
  deadLetters: {
    anchor: 'dead-letters',
    happened:
      'Messages reached the dead-letter queue: a permanent error, or 17 deliveries (about 4h46m of RocketMQ-style retries) did not succeed.',
    action:
      'Read the failure-code/failure-reason attributes of a dead letter, fix the cause, then redrive the DLQ to the source queue (console "Start DLQ redrive" or aws sqs start-message-move-task); duplicates are suppressed.',
  },
  oldestMessage: {
    anchor: 'oldest-message-age',
    happened:
      'The oldest message in the source queue has waited longer than the threshold: the consumer is stalled, throttled or too slow.',
    action:
      'Check the function errors, throttles and the event source mapping (enabled? max concurrency?), and the DynamoDB throttling metrics; raise max concurrency or fix the failing dependency.',
  },
  blockedGroup: {
    anchor: 'blocked-message-group',
    happened:
      'An orderly group has a message older than its whole retry policy (every attempt up to the function timeout, and the fixed interval after each): a message group no longer moves, so every later message of that group (one order) waits.',
    action:
      'Find the group in the function logs ("record failed" with the same key, rising attempt; "record held back"). If the function crashes or times out, fix that: crashes are not counted, only the queue redrive ends them. Otherwise wait for the failing message to reach its maximum and the DLQ, or fix its cause so it succeeds.',
  },
  functionErrors: {
    anchor: 'function-errors',
    happened:
      'The consumer function failed whole invocations (crash, timeout or bad configuration), so every message of those batches will be redelivered.',
    action:
      'Search the function log group for level ERROR / "Task timed out"; check the environment and the last deployment; roll back if it started with a deployment.',
  },
  functionThrottles: {
    anchor: 'function-throttles',
    happened:
      'Lambda throttled the consumer for several periods in a row: the account or function concurrency is exhausted.',
    action:
      'Compare account concurrency with the event source maximum concurrency of all groups; lower maxConcurrency or request a higher account limit.',
  },
  payloadConflicts: {
    anchor: 'payload-conflicts',
    happened:
      'A message reused the business key of an already processed message with a different payload; it was not applied and went to the DLQ as PAYLOAD_CONFLICT.',
    action:
      'Compare the dead letter with the stored dedup record (id = <group>#<key>); ask the producer which one is right. Never redrive it blindly: it would conflict again.',
  },
  permanentErrors: {
    anchor: 'permanent-errors',
    happened:
      'The consumer classified a message as permanently failing (invalid envelope or payload, business rejection) and dead-lettered it without retries.',
    action:
      'Read failure-code and failure-reason on the dead letter; fix the producer or the data, then redrive or discard the dead letter.',
  },
  filteredOut: {
    anchor: 'event-source-filter-drops',
    happened:
      "Lambda's event source filter deleted messages from the group's source queue without invoking the consumer. Every route into the queue carries only the group's tags, so these were unreadable (not JSON), untagged, or of another tag and sent around the bridge and the bus: they are gone, with no dead letter.",
    action:
      "Find the sender: compare the queue's NumberOfMessagesSent with the bridge's Forwarded count and the bus rule's matched events, and check that every bridge route to this queue subscribes with the group's tag expression. To keep such messages for a look, set the group's filterAtEventSource to false: the consumer then dead-letters them with a reason.",
  },
  outboxRelayLag: {
    anchor: 'outbox-relay-lag',
    happened:
      "The group's outbox relay reads its stream more than 4 minutes behind (IteratorAge): a healthy relay is through a batch, even one bisected down to a bad record, sooner. Committed effects wait for their messages downstream; past 23 hours the mapping gives the records up to the relay's DLQ.",
    action:
      'Check the relay function errors and throttles, its event source mapping (enabled? its last processing result), and the target: the subscribing queue, the bus or the bridge outbound queue refusing or throttling. Once the relay moves it catches up by itself; ops outbox list shows what is still PENDING and how old.',
  },
  outboxDeadLetters: {
    anchor: 'outbox-dead-letters',
    happened:
      "The outbox relay's DLQ has messages: an item the relay could never send (refused by its target, too large, no target), marked FAILED with its reason, or stream records the event source mapping gave up on after its retries or 23 hours (their items are still PENDING in the outbox table).",
    action:
      'Run ops dlq list --group <group> --outbox: each letter is a relay notice (reason, event id) or records the relay gave up on (shard, sequence range). Fix the cause (target, policy, size), then ops outbox redrive --event-id <id> for a notice, ops outbox redrive --stale for given-up records (dry runs; add --apply): the items go PENDING again and the stream relays them; downstream consumers deduplicate on the event id.',
  },
  outboxRelayErrors: {
    anchor: 'outbox-relay-errors',
    happened:
      "The outbox relay failed whole invocations (crash, timeout or bad configuration): the stream retries the batch, bisecting it, and the group's messages wait behind it.",
    action:
      'Search the relay log group for level ERROR / "Task timed out"; check its environment (OUTBOX_TARGETS, the signing key) and the last deployment; roll back if it started with one. Watch the relay lag and the relay DLQ alarms for what it holds back.',
  },
  notifierDeadLetters: {
    anchor: 'notifier-dead-letters',
    happened:
      'Alarm notifications could not be delivered to DingTalk after Lambda retries; they are parked in the notifier DLQ, so alarms may have gone unseen.',
    action:
      'Check the notifier logs (secret shape, DingTalk errcode 310000/410100), fix the secret or robot, then look at the alarms in the CloudWatch console; the DLQ keeps the events 14 days.',
  },
  notifierErrors: {
    anchor: 'notifier-errors',
    happened:
      'The DingTalk alarm notifier failed invocations: alarm messages are being retried and may be late or lost.',
    action:
      'Check the notifier log group and its DingTalkConfigurationError / DingTalkMessageRejected metrics; verify the webhook secret in Secrets Manager.',
  },
  bridgeForwardFailures: {
    anchor: 'bridge-forward-failures',
    happened:
      'The bridge could not forward messages of a route to its queue: they stay un-acked in RocketMQ and come back after their invisible duration, so nothing is lost, but the route is not moving.',
    action:
      'Read the bridge log group for "batch failed" and the SQS error (AccessDenied, KMS, throttling, queue deleted); check the task role and the queue; the route resumes by itself once SQS accepts again.',
  },
  bridgeReceiveFailures: {
    anchor: 'bridge-receive-failures',
    happened:
      'The bridge kept failing to receive from RocketMQ for a route: the cluster, its proxy or name servers, the network path or the ACL credentials are failing.',
    action:
      'Check the cluster (proxy/broker health, topic and consumer group exist), the security groups and routes from the bridge subnets, and the credentials secret; the bridge retries with backoff.',
  },
  bridgeTasks: {
    anchor: 'bridge-tasks',
    happened:
      'Fewer bridge tasks are running than the service should keep: tasks fail their health check, crash or cannot start, so the routes are forwarded slowly or not at all.',
    action:
      "Open the ECS service events and the stopped tasks' reasons (image pull, secret, out of memory, health check); the deployment circuit breaker rolls back a bad deployment by itself.",
  },
  bridgeLag: {
    anchor: 'bridge-lag',
    happened:
      'Messages a route forwards were stored in RocketMQ long before: the bridge runs behind its topic (too few tasks, slow SQS, or a backlog after an outage).',
    action:
      "Compare the route's Received and Forwarded rates; raise the stage's bridge maxCount or task size, check SQS throttling; for RocketMQ 4 more tasks than queues of the topic do not help.",
  },
} as const satisfies Record<string, RunbookEntry>;

export type RunbookKey = keyof typeof RUNBOOK;

/** An alarm description: what happened, what to do, where to read more (CloudWatch allows 1024 characters). */
export function alarmDescription(key: RunbookKey, subject: string, runbookUrl: string): string {
  const entry = RUNBOOK[key];
  return `[${subject}] ${entry.happened} What to do: ${entry.action} Runbook: ${runbookUrl}#${entry.anchor}`.slice(
    0,
    1024,
  );
}
