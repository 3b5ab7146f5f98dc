import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { assertAccessible, browserUnavailable } from "../helpers/browser.ts";
import { startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";
import { choose } from "../helpers/web-policy.ts";
import { startReceiver, until, type Receiver } from "../helpers/webhook-receiver.ts";

// The Webhooks page against a real server and a real receiver on loopback (allowed by the server's setting): the
// secret shown once signs what the receiver gets, the log shows the delivery, Redeliver sends it again.
const unavailable = browserUnavailable();
let s: DashboardSession;
let receiver: Receiver;

before(async () => {
  if (unavailable) return;
  receiver = await startReceiver();
  s = await startDashboardSession("webhooks", { env: { GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_URLS: "true" } });
});

after(async () => {
  await s?.close();
  await receiver?.stop();
});

test(
  "Webhooks: create (secret once), a write is delivered and logged, Redeliver sends it again, disable, delete; one environment's",
  { skip: unavailable ?? false, timeout: 180_000 },
  async () => {
    const { page, server, log } = s;
    await page.goto(`${server.baseUrl}/o/default/projects`);
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("heading", { name: "Webhooks" }).waitFor();
    await page.getByText("No webhook yet.").waitFor();

    await page.getByRole("button", { name: "New webhook" }).click();
    const form = page.getByRole("dialog", { name: "New webhook" });
    await form.getByLabel("URL").fill(receiver.url);
    await choose(page, form.getByLabel("Events"), "facts.user", "schema.*");
    await form.getByLabel("Description").fill("the CRM's listener");
    await form.getByRole("button", { name: "Create" }).click();

    const shown = page.getByRole("dialog", { name: "Signing secret" });
    const secret = (await shown.getByLabel("Signing secret").innerText()).trim();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    await shown.getByRole("button", { name: "Copy the secret" }).waitFor();
    await assertAccessible(page, "webhooks-secret");
    receiver.setSecret(secret);
    await shown.getByRole("button", { name: "Close", exact: true }).click();
    await shown.waitFor({ state: "detached" });
    // Shown once: neither the page nor the API has it any more.
    assert.ok(!(await page.content()).includes(secret));
    const listed = (await s.api("GET", "/v2/webhooks")).json;
    assert.equal(listed.data.length, 1);
    const hook = listed.data[0];
    assert.equal(hook.secret, undefined);
    assert.deepEqual(hook.events, ["facts.user", "schema.*"]);
    assert.equal(hook.description, "the CRM's listener");
    assert.equal(hook.environment_id, undefined);

    const row = page.getByRole("row").filter({ hasText: receiver.url });
    await row.getByText("facts.user, schema.*").waitFor();
    await row.getByText("organization").waitFor();
    await row.getByText("enabled").waitFor();
    await assertAccessible(page, "webhooks");

    // A write through the API is delivered, signed with the secret shown (the receiver verifies it).
    await s.api("POST", "/v2/facts/default/production/users", { key: "ann" });
    await until(() => receiver.received.length === 1, "the first delivery");
    assert.equal(receiver.received[0]?.type, "facts.user");
    assert.deepEqual(receiver.rejected, []);

    await row.getByRole("button", { name: `Deliveries of ${receiver.url}` }).click();
    const logDialog = page.getByRole("dialog", { name: `Deliveries to ${receiver.url}` });
    const delivery = logDialog.getByRole("row").filter({ hasText: "facts.user" });
    await delivery.getByText("delivered", { exact: true }).waitFor();
    const cells = await delivery.getByRole("cell").allInnerTexts();
    assert.equal(cells[2], "1", "attempts");
    assert.equal(cells[3], "204", "status code");
    assert.match(cells[4] ?? "", /^\d+ ms$/, "latency");
    await logDialog.getByText("1 delivery").waitFor();
    await assertAccessible(page, "webhooks-deliveries");

    await delivery.getByRole("button", { name: /^Redeliver facts\.user / }).click();
    await until(() => receiver.received.length === 2, "the redelivery");
    assert.equal(receiver.received[1]?.id, receiver.received[0]?.id, "a redelivery keeps its webhook-id");
    const deliveries = (await s.api("GET", `/v2/webhooks/${hook.id}/deliveries`)).json;
    assert.equal(deliveries.data.length, 1);
    assert.equal(deliveries.data[0].id, receiver.received[0]?.id);
    await until(async () => {
      const one = (await s.api("GET", `/v2/webhooks/${hook.id}/deliveries/${deliveries.data[0].id}`)).json;
      return one.status === "delivered" && one.attempts === 2;
    }, "the redelivery to be logged");
    await delivery.getByRole("cell", { name: "2", exact: true }).waitFor();
    await logDialog.getByRole("button", { name: "Close dialog" }).click();

    await row.getByRole("button", { name: `Disable ${receiver.url}` }).click();
    await row.getByText("disabled", { exact: true }).waitFor();
    await row.getByRole("button", { name: `Enable ${receiver.url}` }).waitFor();
    const disabled = (await s.api("GET", `/v2/webhooks/${hook.id}`)).json;
    assert.equal(disabled.enabled, false);
    assert.deepEqual(disabled.events, ["facts.user", "schema.*"]);
    assert.equal(disabled.url, receiver.url);

    await row.getByRole("button", { name: `Delete ${receiver.url}` }).click();
    const confirm = page.getByRole("dialog", { name: `Delete the webhook to ${receiver.url}` });
    await confirm.getByRole("button", { name: "Delete" }).click();
    await page.getByText("No webhook yet.").waitFor();
    assert.deepEqual((await s.api("GET", "/v2/webhooks")).json.data, []);

    // One environment's webhook: the scope is chosen in the form and shown as the keys.
    const project = (await s.api("GET", "/v2/projects/default")).json;
    const envs = (await s.api("GET", "/v2/projects/default/envs")).json as { key: string; name: string }[];
    const production = envs.find((e) => e.key === "production");
    await page.getByRole("button", { name: "New webhook" }).click();
    const envUrl = `${receiver.url}-production`;
    await form.getByLabel("URL").fill(envUrl);
    await choose(page, form.getByLabel("Events"), "*");
    await choose(page, form.getByLabel("Scope"), "Environment");
    await choose(page, form.getByPlaceholder("Choose a project"), project.name);
    await choose(page, form.getByPlaceholder("Choose an environment"), production?.name ?? "");
    await form.getByRole("button", { name: "Create" }).click();
    await shown.getByRole("button", { name: "Close", exact: true }).click();
    const envRow = page.getByRole("row").filter({ hasText: envUrl });
    await envRow.getByText("default / production").waitFor();
    const [scoped] = (await s.api("GET", "/v2/webhooks")).json.data;
    assert.equal(scoped.project_id, project.id);
    assert.ok(scoped.environment_id);
    assert.deepEqual(scoped.events, ["*"]);

    log.assertPublicApiOnly(server.baseUrl);
  },
);
