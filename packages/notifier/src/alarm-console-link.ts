/**
 * Link to the alarm in the CloudWatch console. The alarm JSON names its region only for display
 * ("Asia Pacific (Tokyo)"), so the region code comes from `AlarmArn`; the display-name table is the
 * fallback for payloads without an ARN, and the notifier's own region the last resort.
 */

const REGION_BY_DISPLAY_NAME: Record<string, string> = {
  'US East (N. Virginia)': 'us-east-1',
  'US East (Ohio)': 'us-east-2',
  'US West (N. California)': 'us-west-1',
  'US West (Oregon)': 'us-west-2',
  'Africa (Cape Town)': 'af-south-1',
  'Asia Pacific (Hong Kong)': 'ap-east-1',
  'Asia Pacific (Hyderabad)': 'ap-south-2',
  'Asia Pacific (Jakarta)': 'ap-southeast-3',
  'Asia Pacific (Malaysia)': 'ap-southeast-5',
  'Asia Pacific (Melbourne)': 'ap-southeast-4',
  'Asia Pacific (Mumbai)': 'ap-south-1',
  'Asia Pacific (Osaka)': 'ap-northeast-3',
  'Asia Pacific (Seoul)': 'ap-northeast-2',
  'Asia Pacific (Singapore)': 'ap-southeast-1',
  'Asia Pacific (Sydney)': 'ap-southeast-2',
  'Asia Pacific (Taipei)': 'ap-east-2',
  'Asia Pacific (Thailand)': 'ap-southeast-7',
  'Asia Pacific (Tokyo)': 'ap-northeast-1',
  'Canada (Central)': 'ca-central-1',
  'Canada West (Calgary)': 'ca-west-1',
  'China (Beijing)': 'cn-north-1',
  'China (Ningxia)': 'cn-northwest-1',
  'Europe (Frankfurt)': 'eu-central-1',
  'Europe (Ireland)': 'eu-west-1',
  'Europe (London)': 'eu-west-2',
  'Europe (Milan)': 'eu-south-1',
  'Europe (Paris)': 'eu-west-3',
  'Europe (Spain)': 'eu-south-2',
  'Europe (Stockholm)': 'eu-north-1',
  'Europe (Zurich)': 'eu-central-2',
  'Israel (Tel Aviv)': 'il-central-1',
  'Mexico (Central)': 'mx-central-1',
  'Middle East (Bahrain)': 'me-south-1',
  'Middle East (UAE)': 'me-central-1',
  'South America (Sao Paulo)': 'sa-east-1',
  'AWS GovCloud (US-West)': 'us-gov-west-1',
  'AWS GovCloud (US-East)': 'us-gov-east-1',
};

const ARN = /^arn:(aws[a-z-]*):cloudwatch:([a-z0-9-]+):\d*:alarm:/;

export interface AlarmLocation {
  partition: string;
  region: string;
}

export function alarmLocation(
  alarm: { alarmArn: string | null; regionName: string | null },
  fallbackRegion: string | undefined,
): AlarmLocation | null {
  const arn = alarm.alarmArn ? ARN.exec(alarm.alarmArn) : null;
  if (arn) return { partition: arn[1]!, region: arn[2]! };
  const region = (alarm.regionName && REGION_BY_DISPLAY_NAME[alarm.regionName.trim()]) || fallbackRegion;
  if (!region) return null;
  return { partition: region.startsWith('cn-') ? 'aws-cn' : 'aws', region };
}

/** `null` when no region can be determined: a wrong link is worse than none. */
export function alarmConsoleUrl(
  alarm: { alarmName: string; alarmArn: string | null; regionName: string | null },
  fallbackRegion?: string,
): string | null {
  const location = alarmLocation(alarm, fallbackRegion);
  if (!location) return null;
  const host =
    location.partition === 'aws-cn'
      ? `${location.region}.console.amazonaws.cn`
      : location.partition === 'aws-us-gov'
        ? `${location.region}.console.amazonaws-us-gov.com`
        : `${location.region}.console.aws.amazon.com`;
  return `https://${host}/cloudwatch/home?region=${location.region}#alarmsV2:alarm/${strictEncode(alarm.alarmName)}`;
}

/** `encodeURIComponent` leaves `()!*'` alone; a `)` would end a markdown link early. */
function strictEncode(value: string): string {
  return encodeURIComponent(value).replace(/[()!*']/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
