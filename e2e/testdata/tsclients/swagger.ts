// The client swagger-typescript-api generates from api/openapi.yaml with
// its defaults (the fetch client, into ./client/api.ts), driven through
// TestTypeScriptClients' steps.
import { Api, type Error as APIError, type HttpResponse } from "./client/api";
import { chain, chainWidth, check, env, image, isJPEG, metadata, missingImage, run, sameJSON, signedFetch } from "./common";

const api = new Api({ baseUrl: env.url, customFetch: signedFetch });
const user = env.user;
let id = "";

run([
  ["upload", async () => {
    const file = new File([await image("image.png")], "image.png", { type: "image/png" });
    const r = await api.users.uploadImage(user, undefined, { file });
    check(r.status === 201 && r.data.imageIdentifier === env.imageMD5, "uploadImage", r.data);
    id = r.data.imageIdentifier;
  }],
  ["upload by URL", async () => {
    const r = await api.users.uploadImageByUrl(user, undefined, { url: `${env.origin}/byurl.png` });
    check(r.data.imageIdentifier === env.byURLMD5, "uploadImageByUrl", r.data);
  }],
  ["metadata", async () => {
    sameJSON((await api.users.mergeMetadata(user, id, undefined, metadata)).data, metadata, "mergeMetadata");
    sameJSON((await api.users.getMetadata(user, id)).data, metadata, "getMetadata");
  }],
  ["listing", async () => {
    const { data } = await api.users.listImages(user, { metadata: "1" });
    check(data.images.length === 2, "listImages: two images", data);
    sameJSON(data.images.find((e) => e.imageIdentifier === id)?.metadata, metadata, "listed metadata");
  }],
  ["transformed image", async () => {
    const r = await api.users.getImage(user, `${id}.jpg`, { "t[]": chain });
    check(r.data instanceof Blob && (await isJPEG(r.data)), "getImage: a JPEG", r.status);
    check(r.headers.get("X-Service-OutputWidth") === String(chainWidth), "X-Service-OutputWidth",
      r.headers.get("X-Service-OutputWidth"));
  }],
  ["typed error", async () => {
    // The client throws the response of a status that is not 2xx.
    const r = await api.users.getMetadata(user, missingImage).catch((e: HttpResponse<unknown, APIError>) => e);
    const error: APIError = r.error as APIError;
    check(r.status === 404 && error.error.code === 404 && error.error.message === "Image not found", "getMetadata of a missing image", error);
  }],
]);
