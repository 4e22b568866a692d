/** Reading the service's metrics (server/metrics.ts) in tests, as a scraper reads their text. */
import { metricsText } from '@/server/metrics';

/**
 * The sum of the samples of `name` whose labels include `labels`, or undefined when there is none
 * (a gauge whose label set is gone, a counter never counted).
 */
export async function metricSample(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const { text } = await metricsText();
  let total: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) total = (total ?? 0) + Number(m[3]);
  }
  return total;
}

/** As metricSample, 0 when there is none. */
export async function metricValue(name: string, labels: Record<string, string> = {}): Promise<number> {
  return (await metricSample(name, labels)) ?? 0;
}
