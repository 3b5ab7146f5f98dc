import { Type, type TSchema } from "typebox";
import { EnvParams, ErrorFields, Ref } from "../lib/schemas.ts";
import { MAX_WAIT_SECONDS } from "./tasks.service.ts";

export const WaitQuery = Type.Object({
  wait: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_WAIT_SECONDS,
      default: 0,
      description:
        `Seconds to wait for the task to finish (0 to ${MAX_WAIT_SECONDS}); 0 answers at once, otherwise the ` +
        "answer comes as soon as the task finishes or when the time is up",
    }),
  ),
});

export const TaskPathParams = Type.Object({
  ...EnvParams.properties,
  task_id: Ref("task id (UUID)"),
});

export const TaskError = Type.Object(ErrorFields, { description: "the task error object" });

/** The background task record: `result` is filled when `status` is success, `error` when it is failed. */
export const TaskRecordOf = <T extends TSchema>(result: T) =>
  Type.Object({
    task_id: Type.String({ format: "uuid" }),
    status: Type.Union([Type.Literal("processing"), Type.Literal("success"), Type.Literal("failed")]),
    progress: Type.Integer({
      minimum: 0,
      maximum: 100,
      description: "0 to 100 while processing; 100 on success",
    }),
    result: Type.Union([result, Type.Null()]),
    error: Type.Union([TaskError, Type.Null()]),
  });
