// The client @hey-api/openapi-ts generates from api/openapi.yaml with its
// defaults (into ./client), driven through TestTypeScriptClients' steps.
import { client } from "./client/client.gen";
import { getImage, getMetadata, listImages, mergeMetadata, uploadImage, uploadImageByUrl } from "./client/sdk.gen";
import { chain, chainWidth, check, env, image, isJPEG, metadata, missingImage, run, sameJSON, signedFetch } from "./common";

client.setConfig({ baseUrl: env.url, fetch: signedFetch });
const user = env.user;
let id = "";

run([
  ["upload", async () => {
    const { data, response } = await uploadImage({ path: { user }, body: { file: await image("image.png") } });
    check(response.status === 201 && data?.imageIdentifier === env.imageMD5, "uploadImage", data ?? response.status);
    id = data!.imageIdentifier;
  }],
  ["upload by URL", async () => {
    const { data } = await uploadImageByUrl({ path: { user }, body: { url: `${env.origin}/byurl.png` } });
    check(data?.imageIdentifier === env.byURLMD5, "uploadImageByUrl", data);
  }],
  ["metadata", async () => {
    const merged = await mergeMetadata({ path: { user, image: id }, body: metadata });
    sameJSON(merged.data, metadata, "mergeMetadata");
    const read = await getMetadata({ path: { user, image: id } });
    sameJSON(read.data, metadata, "getMetadata");
  }],
  ["listing", async () => {
    const { data } = await listImages({ path: { user }, query: { metadata: "1" } });
    check(data?.images.length === 2, "listImages: two images", data);
    const entry = data!.images.find((e) => e.imageIdentifier === id);
    sameJSON(entry?.metadata, metadata, "listed metadata");
  }],
  ["transformed image", async () => {
    const { data, response } = await getImage({ path: { user, image: `${id}.jpg` }, query: { "t[]": chain } });
    check(data instanceof Blob && (await isJPEG(data)), "getImage: a JPEG", response.status);
    check(response.headers.get("X-Service-OutputWidth") === String(chainWidth), "X-Service-OutputWidth",
      response.headers.get("X-Service-OutputWidth"));
  }],
  ["typed error", async () => {
    const { error, response } = await getMetadata({ path: { user, image: missingImage } });
    check(response.status === 404 && error?.error.code === 404 && error.error.message === "Image not found", "getMetadata of a missing image", error);
  }],
]);
