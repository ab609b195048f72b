import { describe, expect, it } from "vitest";
import { parentFor, placeOf, versionsOf, withVersions } from "../src/chat/versions";

const item = (id: string, parent: string | null, ids: string[]) => ({ id, versions: { parent_id: parent, ids } });

describe("answer versions", () => {
  it("reads the history's versions and keeps the newest", () => {
    const map = withVersions({}, [item("m1", null, ["m1"]), item("m2b", "m1", ["m2", "m2b"])]);
    expect(map.m2b).toEqual({ parentId: "m1", ids: ["m2", "m2b"] });
    expect(withVersions(map, [item("m2b", "m1", ["m2", "m2b", "m2c"])]).m2b.ids).toHaveLength(3);
    expect(versionsOf({ id: "x" })).toBeNull(); // a server without versions
    expect(versionsOf({ id: "x", versions: { ids: "nope" } })).toBeNull();
  });

  it("places a message among its versions, only when it has more than one", () => {
    const map = withVersions({}, [item("m1", null, ["m1"]), item("m2b", "m1", ["m2", "m2b"])]);
    expect(placeOf(map, "m2b")).toEqual({ i: 2, n: 2, ids: ["m2", "m2b"] });
    expect(placeOf(map, "m1")).toBeNull();
    expect(placeOf(map, null)).toBeNull();
  });

  it("finds what a new version follows: the history's parent, else the message shown before", () => {
    const map = withVersions({}, [item("m2", "m1", ["m2"])]);
    const shown = [{ id: "m1" }, { id: "m2" }, { id: "m3" }];
    expect(parentFor(map, shown, 1)).toBe("m1");
    expect(parentFor(map, shown, 2)).toBe("m2"); // just streamed: not in the history yet
    expect(parentFor(map, shown, 0)).toBeNull(); // the first message: a new first version
  });
});
