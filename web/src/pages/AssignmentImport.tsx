import { useEffect, useMemo, useState } from "react";
import { Button, Code, FileInput, Group, Modal, Progress as Bar, Stack, Text } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { asPage } from "../components/fields";
import { ErrorState } from "../components/states";
import { DataTable } from "../components/tables";
import { useEnvPath } from "../queries";
import { COLUMNS, importCsv, type Progress } from "./csv-import";

const SHOWN_ERRORS = 200;

/** The error report as a CSV file to download. */
function reportUrl(progress: Progress): string {
  const quote = (v: string | number) => `"${String(v).replace(/"/g, '""')}"`;
  const lines = [
    "line,key,problem",
    ...progress.errors.map((e) => [e.line, e.key, e.problem].map(quote).join(",")),
  ];
  return URL.createObjectURL(new Blob([lines.join("\n")], { type: "text/csv" }));
}

/** Reads every tenant role key (the import checks rows against them before sending). */
async function tenantRoleKeys(path: { proj_id: string; env_id: string }): Promise<Set<string>> {
  const keys = new Set<string>();
  for (let page = 1; ; page++) {
    const list = asPage(
      unwrap(
        await api.GET("/v2/schema/{proj_id}/{env_id}/roles", {
          params: { path, query: { page, per_page: 100 } },
        }),
      ),
    ).data;
    for (const role of list) keys.add(role.key);
    if (list.length < 100) return keys;
  }
}

/** Imports users and their role assignments from a CSV file, through the bulk routes, with progress and errors. */
export function AssignmentImport({ onClose, onDone }: { onClose: () => void; onDone: () => void }) {
  const { path } = useEnvPath();
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<Progress | null>(null);
  const [error, setError] = useState<unknown>(null);
  const running = progress !== null && !progress.done && error === null;

  const start = async () => {
    if (!file) return;
    setError(null);
    setProgress({ read: 0, size: file.size, rows: 0, users: 0, assignments: 0, errors: [], done: false });
    try {
      const roles = await tenantRoleKeys(path);
      await importCsv(
        file,
        roles,
        {
          users: async (operations) => {
            unwrap(
              await api.PUT("/v2/facts/{proj_id}/{env_id}/bulk/users", {
                params: { path },
                body: { operations },
              }),
            );
          },
          assign: async (body) => {
            unwrap(
              await api.POST("/v2/facts/{proj_id}/{env_id}/role_assignments/bulk", {
                params: { path },
                body,
              }),
            );
          },
        },
        setProgress,
      );
      onDone();
    } catch (e) {
      setError(e);
    }
  };

  const report = useMemo(
    () => (progress?.done && progress.errors.length > 0 ? reportUrl(progress) : undefined),
    [progress],
  );
  useEffect(() => () => void (report && URL.revokeObjectURL(report)), [report]);
  const percent = progress && progress.size > 0 ? Math.round((progress.read / progress.size) * 100) : 0;
  return (
    <Modal
      opened
      onClose={running ? () => {} : onClose}
      title="Import users and assignments"
      centered
      size="xl"
    >
      <Stack>
        <Text size="sm">
          A CSV file whose first line names its columns: <Code>{COLUMNS.join(",")}</Code>. Only{" "}
          <Code>key</Code> is required; a user is created or replaced, and a row with a <Code>role</Code> also
          assigns it (in <Code>tenant</Code>, or on <Code>resource_instance</Code> as <Code>type:key</Code>),
          until <Code>expires_at</Code> when given. Several rows may name one user.
        </Text>
        <FileInput
          label="CSV file"
          accept=".csv,text/csv"
          value={file}
          onChange={setFile}
          disabled={running}
          clearable
          clearButtonProps={{ "aria-label": "Clear the file" }}
        />
        {error !== null && <ErrorState error={error} />}
        {progress && (
          <Stack gap={4}>
            <Bar value={percent} aria-label="Import progress" animated={running} />
            <Text size="sm" role="status" aria-label="Import status">
              {progress.done
                ? "Import finished: "
                : `Importing (${percent}%${progress.waiting ? ", waiting for the rate limit" : ""}): `}
              {progress.rows.toLocaleString("en")} rows read, {progress.users.toLocaleString("en")} users and{" "}
              {progress.assignments.toLocaleString("en")} assignments imported,{" "}
              {progress.errors.length.toLocaleString("en")} rows refused.
            </Text>
          </Stack>
        )}
        {progress?.done && progress.errors.length > 0 && (
          <>
            <DataTable
              label="Refused rows"
              columns={["Line", "Key", "Problem"]}
              rows={progress.errors.slice(0, SHOWN_ERRORS)}
              rowKey={(e, i) => `${e.line}-${i}`}
              cells={(e) => [e.line, e.key, e.problem]}
            />
            {progress.errors.length > SHOWN_ERRORS && (
              <Text size="sm" c="dimmed">
                The first {SHOWN_ERRORS} of {progress.errors.length.toLocaleString("en")}; the report has them
                all.
              </Text>
            )}
          </>
        )}
        <Group justify="flex-end">
          {report && (
            <Button component="a" variant="default" href={report} download="import-errors.csv">
              Download the error report
            </Button>
          )}
          <Button variant="default" onClick={onClose} disabled={running}>
            Close
          </Button>
          <Button onClick={() => void start()} disabled={!file || running} loading={running}>
            Import
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
