// The custom fetch orval's fetch client calls (orval.config.cjs), as orval's
// documentation writes one: the base URL, the signature, and a body read by
// its type, JSON or bytes.
import { env, signedFetch } from "./common";

export const customFetch = async <T>(url: string, init: RequestInit): Promise<T> => {
  const res = await signedFetch(env.url + url, init);
  const type = res.headers.get("Content-Type") ?? "";
  const data = [204, 205, 304].includes(res.status) ? null : type.includes("json") ? await res.json() : await res.blob();
  return { status: res.status, data, headers: res.headers } as T;
};
