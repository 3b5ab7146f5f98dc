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
