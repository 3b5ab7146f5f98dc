import { test } from "node:test";
import assert from "node:assert/strict";
import { isUuid, newId } from "../../src/lib/ids.ts";

test("ids are version-7 UUIDs that sort in creation order, even within one millisecond", () => {
  const ids = Array.from({ length: 5000 }, () => newId());
  for (const id of ids) {
    assert.ok(isUuid(id), id);
    assert.equal(id[14], "7", `version nibble of ${id}`);
    assert.match(id[19] ?? "", /[89ab]/, `variant of ${id}`);
  }
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
});
