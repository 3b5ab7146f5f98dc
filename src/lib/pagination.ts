export interface PageRequest {
  page: number;
  perPage: number;
}

export const pageRequest = (query: { page?: number; per_page?: number }): PageRequest => ({
  page: query.page ?? 1,
  perPage: query.per_page ?? 30,
});

export const offsetOf = (p: PageRequest): number => (p.page - 1) * p.perPage;

export interface Page<T> {
  data: T[];
  total_count: number;
  page_count: number;
}

export const envelope = <T>(data: T[], total: number, p: PageRequest): Page<T> => ({
  data,
  total_count: total,
  page_count: Math.ceil(total / p.perPage),
});

/** One page of a list and, when asked, how many items the whole list holds. */
export interface CountedPage<T> {
  data: T[];
  total: () => Promise<number>;
}

/**
 * A fact list's two routes from its page reader: `list`, whose answer follows detailed x include_total_count (a plain
 * array, or the paginated envelope), and `listDetailed`, always detailed and paginated.
 */
export const factLists = <
  S extends { environment: unknown },
  Q extends { detailed?: boolean | undefined; include_total_count?: boolean | undefined },
  T,
>(
  page: (environment: S["environment"], q: Q, p: PageRequest, detailed: boolean) => Promise<CountedPage<T>>,
) => ({
  async list({ environment }: S, q: Q, p: PageRequest): Promise<T[] | Page<T>> {
    const { data, total } = await page(environment, q, p, q.detailed === true);
    return q.include_total_count ? envelope(data, await total(), p) : data;
  },
  async listDetailed({ environment }: S, q: Q, p: PageRequest): Promise<Page<T>> {
    const { data, total } = await page(environment, q, p, true);
    return envelope(data, await total(), p);
  },
});
