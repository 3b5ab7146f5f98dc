/** ISO 8601 with an explicit +00:00 offset; fixed width, so text order is time order. */
export const toTimestamp = (date: Date): string => date.toISOString().replace("Z", "+00:00");
export const now = (): string => toTimestamp(new Date());
