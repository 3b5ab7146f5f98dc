import { useState, type ReactNode } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Badge, Code, Modal } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { useOrg } from "../org";
import { notifyError } from "../notify";
import { PagedTable, RowButton } from "../components/tables";

const PER_PAGE = 20;
const STATUS_COLOR = { delivered: "teal", pending: "orange", failed: "red" } as const;
const when = (at: string | undefined) => (at ? new Date(at).toLocaleString() : "—");

/** A webhook's delivery log, newest first, a page at a time, with a Redeliver button on each delivery. */
export function DeliveryLog({
  webhookId,
  title,
  onClose,
}: {
  webhookId: string;
  title: ReactNode;
  onClose: () => void;
}) {
  const org = useOrg();
  const queryClient = useQueryClient();
  const [page, setPage] = useState(1);
  const key = [org.id, "webhooks", webhookId, "deliveries", page];
  const deliveries = useQuery({
    queryKey: key,
    // A pending delivery changes on its own: the log is read again while it is open.
    refetchInterval: 2000,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/webhooks/{webhook_id}/deliveries", {
          params: { path: { webhook_id: webhookId }, query: { page, per_page: PER_PAGE } },
        }),
      ),
  });
  const redeliver = async (id: string) => {
    try {
      unwrap(
        await api.POST("/v2/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", {
          params: { path: { webhook_id: webhookId, delivery_id: id } },
        }),
      );
      await queryClient.invalidateQueries({ queryKey: key });
    } catch (e) {
      notifyError(e);
    }
  };
  return (
    <Modal opened onClose={onClose} title={title} centered size="90%">
      <PagedTable
        label="Deliveries"
        query={deliveries}
        empty="No delivery yet."
        noun="delivery"
        plural="deliveries"
        page={page}
        onPage={setPage}
        columns={["Event", "Status", "Attempts", "Status code", "Latency", "Response", "Time", "Actions"]}
        rowKey={(d) => d.id}
        cells={(d) => [
          d.event_type,
          <Badge key="status" color={STATUS_COLOR[d.status]} variant="light">
            {d.status}
          </Badge>,
          d.attempts,
          d.last_status_code ?? "—",
          d.last_latency_ms === undefined ? "—" : `${d.last_latency_ms} ms`,
          d.last_response || d.last_error ? (
            <Code key="response">{d.last_response ?? d.last_error}</Code>
          ) : (
            "—"
          ),
          when(d.last_attempt_at ?? d.created_at),
          <RowButton
            key="redeliver"
            label={`Redeliver ${d.event_type} ${d.id}`}
            onClick={() => void redeliver(d.id)}
          >
            Redeliver
          </RowButton>,
        ]}
      />
    </Modal>
  );
}
