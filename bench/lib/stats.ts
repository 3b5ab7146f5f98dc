import { rng } from "./pdp-dataset.ts";

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * The mean of `xs` with a 95% interval from a seeded bootstrap: the values drawn again with replacement, many
 * times over. Each value is one independent measurement, so the interval is as wide as their spread makes it.
 */
export function meanInterval(xs: number[], seed = 1, rounds = 2000): Interval {
  const random = rng(seed);
  const mean = (ys: number[]) => ys.reduce((a, b) => a + b, 0) / ys.length;
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
export const signedPercent = (x: number) => `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)}%`;

/** "+1.2% (95% interval -0.8% to +3.1%)". */
export const withInterval = (x: Interval) =>
  `${signedPercent(x.estimate)} (95% interval ${signedPercent(x.low)} to ${signedPercent(x.high)})`;
