import { describe, expect, it } from 'vitest';
import { retryDelay } from './dispatcher';

describe('retryDelay', () => {
  it('doubles from the base, with half of it random', () => {
    expect(retryDelay(5_000, 1, () => 0)).toBe(2_500);
    expect(retryDelay(5_000, 1, () => 1)).toBe(5_000);
    expect(retryDelay(5_000, 4, () => 0)).toBe(20_000);
    expect(retryDelay(5_000, 4, () => 1)).toBe(40_000);
  });

  it('never waits more than an hour, however many failures', () => {
    expect(retryDelay(5_000, 40, () => 1)).toBe(3_600_000);
    expect(retryDelay(5_000, 1_000, () => 0)).toBe(1_800_000);
  });

  it('keeps retrying for at least 24 hours: the delays of the default schedule add up past a day by the 35th attempt', () => {
    let total = 0;
    let n = 0;
    while (total < 24 * 3_600_000) total += retryDelay(5_000, ++n, () => 1);
    expect(n).toBeLessThan(40);
  });
});
