import { test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { findPrincipal, findPrincipalAndPath } from "../../src/domain/api-key-records.ts";
import { findProject } from "../../src/domain/project-records.ts";
import { findEnvironment } from "../../src/domain/environment-records.ts";

describeEachDialect("path scope read with the API key", (env) => {
  test("the key's lookup reads the rows of the path's project and environment, whole, by key or id, only in its organization", async () => {
    const { store, acme, globex } = env();
    const db = store.db;
    const project = await findProject(db, acme.id, "default");
    const production = await findEnvironment(db, project?.id ?? "", "production");
    assert.ok(project && production);
    const principal = await findPrincipal(db, acme.adminKey);
    for (const refs of [
      { project: "default", environment: "production" },
      { project: project.id.toUpperCase(), environment: production.id },
    ]) {
      const found = await findPrincipalAndPath(db, acme.adminKey, refs);
      assert.deepEqual(found?.principal, principal);
      assert.deepEqual(found?.path, { project, environment: production });
    }
    assert.deepEqual(
      (await findPrincipalAndPath(db, acme.adminKey, { project: "default", environment: undefined }))?.path,
      {
        project,
        environment: undefined,
      },
    );
    assert.deepEqual(
      (await findPrincipalAndPath(db, acme.adminKey, { project: "default", environment: "nope" }))?.path,
      {
        project,
        environment: undefined,
      },
    );
    // Another organization's project, named by id: not found for this key.
    const theirs = await findProject(db, globex.id, "default");
    assert.ok(theirs);
    assert.deepEqual(
      (await findPrincipalAndPath(db, acme.adminKey, { project: theirs.id, environment: undefined }))?.path,
      {
        project: undefined,
        environment: undefined,
      },
    );
    assert.equal(
      await findPrincipalAndPath(db, "not-a-key", { project: "default", environment: "production" }),
      null,
    );
  });
});
