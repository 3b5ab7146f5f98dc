import { useState } from "react";
import { useSearchParams } from "react-router";
import { Group, Pagination, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";

/** Page controls whose buttons say what they do. */
export function Pages({
  total,
  page,
  onChange,
}: {
  total: number;
  page: number;
  onChange: (page: number) => void;
}) {
  return (
    <Pagination
      total={total}
      value={page}
      onChange={onChange}
      getControlProps={(control) => ({ "aria-label": `${control} page` })}
      getItemProps={(item) => ({ "aria-label": `Page ${item}` })}
    />
  );
}

/** Under a table: how many there are in all, and the pages. */
export function PageFooter(props: {
  count: string;
  total: number;
  page: number;
  onChange: (page: number) => void;
}) {
  return (
    <Group justify="space-between">
      <Text size="sm" c="dimmed">
        {props.count}
      </Text>
      <Pages total={props.total} page={props.page} onChange={props.onChange} />
    </Group>
  );
}

/**
 * A server-side list's page and search, kept in the URL (`?page=&q=`) so a view can be shared; the search is sent
 * once typing pauses.
 */
export function usePagedSearch() {
  const [params, setParams] = useSearchParams();
  const page = Math.max(1, Number(params.get("page") ?? "1") || 1);
  const [search, setSearch] = useState(params.get("q") ?? "");
  const [query] = useDebouncedValue(search.trim(), 300);
  const goTo = (next: number, q = query) => setParams(q ? { page: String(next), q } : { page: String(next) });
  const onSearch = (text: string) => {
    setSearch(text);
    if (page !== 1) goTo(1, text.trim());
  };
  return { page, search, query, goTo, onSearch };
}

/** The search box of a paged list. */
export function SearchInput(props: {
  label: string;
  placeholder: string;
  paged: ReturnType<typeof usePagedSearch>;
}) {
  return (
    <TextInput
      label={props.label}
      placeholder={props.placeholder}
      value={props.paged.search}
      onChange={(e) => props.paged.onSearch(e.currentTarget.value)}
    />
  );
}
