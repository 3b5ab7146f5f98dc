import { rng } from "./pdp-dataset.ts";

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export const mean = (xs: number[]) => xs.reduce((sum, value) => sum + value, 0) / xs.length;

/**
 * The mean of `xs` with a 95% interval from a seeded bootstrap: the values drawn again with replacement, many
 * times over. Each value is one independent measurement, so the interval is as wide as their spread makes it.
 */
export function meanInterval(xs: number[], seed = 1, rounds = 2000): Interval {
  const random = rng(seed);
  const means = Array.from({ length: rounds }, () =>
    mean(xs.map(() => xs[Math.floor(random() * xs.length)] as number)),
  ).sort((x, y) => x - y);
  return {
    estimate: mean(xs),
    low: means[Math.floor(0.025 * rounds)] as number,
    high: means[Math.ceil(0.975 * rounds) - 1] as number,
  };
}

export interface Interval {
  estimate: number;
  low: number;
  high: number;
}

/** A fraction as a signed percentage: 0.012 → "+1.2%". */
export const signedPercent = (fraction: number) =>
  `${fraction >= 0 ? "+" : ""}${(100 * fraction).toFixed(1)}%`;

/** "+1.2% (95% interval -0.8% to +3.1%)". */
export const withInterval = (interval: Interval) =>
  `${signedPercent(interval.estimate)} (95% interval ${signedPercent(interval.low)} to ${signedPercent(interval.high)})`;
