import { useEffect, type ReactNode } from "react";
import { Box, Button, Group, Table, Title } from "@mantine/core";
import { countOf, PageFooter } from "./paging";
import { Empty, QueryState } from "./states";

/** A page's heading with its main write action (shown to members who may write). */
export function PageHead({ title, action }: { title: string; action?: ReactNode }) {
  return (
    <Group justify="space-between">
      <Title order={1} size="h2">
        {title}
      </Title>
      {action}
    </Group>
  );
}

/**
 * A table of objects: the column names, then a row of cells per object. A column named `false` is left out (an
 * Actions column for members who may not write), and so is the cell at its place in each row.
 */
export function DataTable<T>({
  label,
  columns,
  rows,
  rowKey,
  cells,
  striped = true,
  highlightOnHover,
  emptyRow,
}: {
  label?: string;
  columns: (string | false)[];
  rows: T[];
  rowKey: (row: T, index: number) => string;
  cells: (row: T) => ReactNode[];
  striped?: boolean;
  highlightOnHover?: boolean;
  /** The one row shown when there are none. */
  emptyRow?: ReactNode;
}) {
  const shown = columns.flatMap((column, i) => (column === false ? [] : [{ column, i }]));
  // A wide table scrolls inside its own box, not the page (reachable by keyboard: it takes the focus).
  return (
    <Box className="table-scroll" tabIndex={0} role="region" aria-label={label ?? "Table"}>
      <Table striped={striped} highlightOnHover={highlightOnHover} aria-label={label}>
        <Table.Thead>
          <Table.Tr>
            {shown.map(({ column }) => (
              <Table.Th key={column}>{column}</Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.length === 0 && emptyRow !== undefined && (
            <Table.Tr>
              <Table.Td colSpan={shown.length}>{emptyRow}</Table.Td>
            </Table.Tr>
          )}
          {rows.map((row, index) => {
            const all = cells(row);
            return (
              <Table.Tr key={rowKey(row, index)}>
                {shown.map(({ column, i }) => (
                  <Table.Td key={column}>{all[i]}</Table.Td>
                ))}
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </Box>
  );
}

type Page<T> = { data: T[]; total_count: number; page_count: number };

/** One page of a server-side list: loading, its error, `empty` when there is nothing, else the table and pages. */
export function PagedTable<T>({
  query,
  empty,
  noun,
  plural,
  page,
  onPage,
  ...table
}: Omit<Parameters<typeof DataTable<T>>[0], "rows"> & {
  query: { isPending: boolean; error: unknown; data: Page<T> | undefined; refetch?: () => unknown };
  empty: ReactNode;
  /** What the list holds, after its count, in the singular: "user" ("1 user", "20,004 users"). */
  noun: string;
  /** Its plural when not `noun` and an s ("deliveries"). */
  plural?: string;
  page: number;
  onPage: (page: number) => void;
}) {
  const last = query.data?.page_count ?? 0;
  // A page past the end (an old link, the last row deleted) shows the last page instead.
  useEffect(() => {
    if (last > 0 && page > last) onPage(last);
  }, [last, page, onPage]);
  return (
    <QueryState query={query}>
      {(result) =>
        result.data.length === 0 && result.total_count === 0 ? (
          <Empty>{empty}</Empty>
        ) : (
          <>
            <DataTable {...table} rows={result.data} />
            <PageFooter
              count={countOf(result.total_count, noun, plural)}
              total={result.page_count}
              page={page}
              onChange={onPage}
            />
          </>
        )
      }
    </QueryState>
  );
}

/** A small button of a table row, named for screen readers and tests (`Delete alice`, not `Delete`). */
export function RowButton({
  label,
  danger,
  onClick,
  children,
}: {
  label: string;
  danger?: boolean;
  onClick: () => void;
  children: ReactNode;
}) {
  return (
    <Button
      size="compact-xs"
      variant="subtle"
      color={danger ? "red" : undefined}
      aria-label={label}
      onClick={onClick}
    >
      {children}
    </Button>
  );
}

/** The buttons of a row: `children` first, then Edit and Delete named after the object (each when given). */
export function RowActions({
  name,
  onEdit,
  onDelete,
  children,
}: {
  name: string;
  onEdit?: () => void;
  onDelete?: () => void;
  children?: ReactNode;
}) {
  return (
    <Group gap="xs" wrap="nowrap">
      {children}
      {onEdit && (
        <RowButton label={`Edit ${name}`} onClick={onEdit}>
          Edit
        </RowButton>
      )}
      {onDelete && (
        <RowButton label={`Delete ${name}`} danger onClick={onDelete}>
          Delete
        </RowButton>
      )}
    </Group>
  );
}
