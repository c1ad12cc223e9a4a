/**
 * Bodies and parameters the API refuses must not type-check either: each line after
 * `@ts-expect-error` is a compile error, or tsc reports the directive as unused and fails.
 */
import createClient from "openapi-fetch";
import type { paths } from "../generated/schema.js";

const api = createClient<paths>({ baseUrl: "http://127.0.0.1:1" });
const video_id = "0b9e8f62-3c1d-4e2a-9f7b-5a6c4d3e2f10";

export async function refused(): Promise<void> {
  // A render needs its format.
  // @ts-expect-error
  await api.POST("/api/v1/videos/{video_id}/renders", { params: { path: { video_id } }, body: { resolution: 720 } });
  // A format the renderer does not make.
  // @ts-expect-error
  await api.POST("/api/v1/videos", { body: { brief: "Spring sale", format: "2:1" } });
  // A story's fields are that story's.
  // @ts-expect-error
  await api.POST("/api/v1/videos", { body: { storyId: "quote", fields: { discount: "50% OFF" } } });
  // A signed download needs its signature.
  // @ts-expect-error
  await api.GET("/files/{key}", { params: { path: { key: "renders/x.mp4" }, query: { expires: "1" } } });
}
