// The types openapi-typescript generates from api/openapi.yaml
// (openapifetch.gen.mjs, into ./schema.ts) used through openapi-fetch,
// driven through TestTypeScriptClients' steps. This client sends the
// image's bytes as the body itself.
import createClient from "openapi-fetch";
import type { paths } from "./schema";
import { chain, chainWidth, check, env, image, isJPEG, metadata, missingImage, run, sameJSON, signedFetch } from "./common";

const client = createClient<paths>({ baseUrl: env.url, fetch: signedFetch });
const user = env.user;
let id = "";

run([
  ["upload", async () => {
    const { data, response } = await client.POST("/users/{user}/images", {
      params: { path: { user } },
      body: await image("image.png"),
      bodySerializer: (body) => body as Blob, // the bytes as they are, not JSON
      headers: { "Content-Type": "image/png" },
    });
    check(response.status === 201 && data?.imageIdentifier === env.imageMD5, "POST /users/{user}/images", data ?? response.status);
    id = data!.imageIdentifier;
  }],
  ["upload by URL", async () => {
    const { data } = await client.POST("/users/{user}/images/url", {
      params: { path: { user } },
      body: { url: `${env.origin}/byurl.png` },
    });
    check(data?.imageIdentifier === env.byURLMD5, "POST /users/{user}/images/url", data);
  }],
  ["metadata", async () => {
    const path = { user, image: id };
    const merged = await client.POST("/users/{user}/images/{image}/metadata", { params: { path }, body: metadata });
    sameJSON(merged.data, metadata, "POST metadata");
    const read = await client.GET("/users/{user}/images/{image}/metadata", { params: { path } });
    sameJSON(read.data, metadata, "GET metadata");
  }],
  ["listing", async () => {
    const { data } = await client.GET("/users/{user}/images", { params: { path: { user }, query: { metadata: "1" } } });
    check(data?.images.length === 2, "listing: two images", data);
    sameJSON(data!.images.find((e) => e.imageIdentifier === id)?.metadata, metadata, "listed metadata");
  }],
  ["transformed image", async () => {
    const { data, response } = await client.GET("/users/{user}/images/{image}", {
      params: { path: { user, image: `${id}.jpg` }, query: { "t[]": chain } },
      parseAs: "blob",
    });
    check(data instanceof Blob && (await isJPEG(data)), "GET image: a JPEG", response.status);
    check(response.headers.get("X-Service-OutputWidth") === String(chainWidth), "X-Service-OutputWidth",
      response.headers.get("X-Service-OutputWidth"));
  }],
  ["typed error", async () => {
    const { error, response } = await client.GET("/users/{user}/images/{image}/metadata", {
      params: { path: { user, image: missingImage } },
    });
    check(response.status === 404 && error?.error.code === 404 && error.error.message === "Image not found", "metadata of a missing image", error);
  }],
]);
