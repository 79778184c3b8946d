// The fetch client orval generates from api/openapi.yaml (orval.config.cjs,
// into ./client/api.ts), driven through TestTypeScriptClients' steps. Each
// answer is typed by its status.
import { getImage, getMetadata, listImages, mergeMetadata, uploadImage, uploadImageByURL } from "./client/api";
import { chain, chainWidth, check, env, image, isJPEG, metadata, missingImage, run, sameJSON } from "./common";

const user = env.user;
let id = "";

run([
  ["upload", async () => {
    const r = await uploadImage(user, { file: await image("image.png") });
    check(r.status === 201, "uploadImage: 201", r);
    if (r.status === 201) {
      check(r.data.imageIdentifier === env.imageMD5, "uploadImage", r.data);
      id = r.data.imageIdentifier;
    }
  }],
  ["upload by URL", async () => {
    const r = await uploadImageByURL(user, { url: `${env.origin}/byurl.png` });
    check(r.status === 201 && r.data.imageIdentifier === env.byURLMD5, "uploadImageByURL", r.data);
  }],
  ["metadata", async () => {
    const merged = await mergeMetadata(user, id, metadata);
    check(merged.status === 200, "mergeMetadata: 200", merged.data);
    sameJSON(merged.data, metadata, "mergeMetadata");
    const read = await getMetadata(user, id);
    check(read.status === 200, "getMetadata: 200", read.data);
    sameJSON(read.data, metadata, "getMetadata");
  }],
  ["listing", async () => {
    const r = await listImages(user, { metadata: "1" });
    if (r.status !== 200) throw new Error(`listImages: ${r.status}`);
    check(r.data.images.length === 2, "listImages: two images", r.data);
    sameJSON(r.data.images.find((e) => e.imageIdentifier === id)?.metadata, metadata, "listed metadata");
  }],
  ["transformed image", async () => {
    const r = await getImage(user, `${id}.jpg`, { "t[]": chain });
    if (r.status !== 200) throw new Error(`getImage: ${r.status}`);
    check(r.data instanceof Blob && (await isJPEG(r.data)), "getImage: a JPEG");
    check(r.headers.get("X-Service-OutputWidth") === String(chainWidth), "X-Service-OutputWidth",
      r.headers.get("X-Service-OutputWidth"));
  }],
  ["typed error", async () => {
    const r = await getMetadata(user, missingImage);
    if (r.status !== 404) throw new Error(`getMetadata of a missing image: ${r.status}`);
    check(r.data.error.code === 404 && r.data.error.message === "Image not found", "getMetadata of a missing image", r.data);
  }],
]);
