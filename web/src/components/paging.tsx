import { useCallback, useEffect, useRef, useState } from "react";
import { useSearchParams } from "react-router";
import { Group, Pagination, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";

/** A count and its noun: "1 user", "20,004 users". */
export const countOf = (n: number, one: string, many = `${one}s`): string =>
  `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

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
  const inUrl = params.get("q") ?? "";
  const [search, setSearch] = useState(inUrl);
  const [typed] = useDebouncedValue(search.trim(), 300);
  // The URL is the truth: what was typed is written there once typing pauses (from page 1), and a URL changed
  // from outside (back, a link) fills the box.
  const written = useRef(inUrl);
  useEffect(() => {
    if (typed === written.current) return;
    written.current = typed;
    setParams(
      (old) => {
        const next = new URLSearchParams(old);
        next.delete("page");
        if (typed) next.set("q", typed);
        else next.delete("q");
        return next;
      },
      { replace: true },
    );
  }, [typed, setParams]);
  useEffect(() => {
    if (inUrl === written.current) return;
    written.current = inUrl;
    setSearch(inUrl);
  }, [inUrl]);
  const goTo = useCallback(
    (next: number) =>
      setParams((old) => {
        const copy = new URLSearchParams(old);
        copy.set("page", String(next));
        return copy;
      }),
    [setParams],
  );
  return { page, search, query: inUrl, goTo, onSearch: setSearch };
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
