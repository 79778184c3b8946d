// What the client programs of TestTypeScriptClients (e2e/tsclients_test.go)
// share: the server and the images the test hands them, a fetch that signs
// as api/README.md's "The API" says, and the checks. Each program drives its own
// generated client through the same steps; none of it touches generated code.

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

export const env = {
  // The server (through the test's checking proxy), the user and its key
  // pair (the key is named like the user, so reads need no publicKey).
  url: need("VITRINE_URL"),
  user: need("VITRINE_USER"),
  privateKey: need("VITRINE_PRIVATE_KEY"),
  // An origin on loopback serving image.png and byurl.png, and their MD5s.
  origin: need("VITRINE_ORIGIN"),
  imageMD5: need("VITRINE_IMAGE_MD5"),
  byURLMD5: need("VITRINE_BYURL_MD5"),
};

// An image identifier the user does not have.
export const missingImage = "0123456789abcdef0123456789abcdef";

// The metadata written and read back: free keys, every kind of JSON value,
// nested.
export const metadata = {
  color: "red",
  rating: 4.5,
  public: true,
  tags: ["beach", "summer"],
  camera: { lens: { focal: 35, primes: [true, "f/1.8"] } },
};

// The transformation chain asked for and the size it gives.
export const chain = ["thumbnail:width=32,height=24", "desaturate"];
export const chainWidth = 32;

export async function image(name: string): Promise<Blob> {
  const r = await fetch(`${env.origin}/${name}`);
  return new Blob([await r.arrayBuffer()], { type: "image/png" });
}

async function hmac(data: string): Promise<string> {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", enc.encode(env.privateKey), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(data)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

// signedFetch is fetch with the credentials of env's key: a read carries
// `accessToken`, the HMAC of its URL with the query decoded; a write the
// signature headers over `METHOD|URL|publicKey|timestamp`.
export const signedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  let req = new Request(input, init);
  if (req.method === "GET" || req.method === "HEAD") {
    const [base, query] = req.url.split("?", 2);
    const signed = query === undefined ? base : `${base}?${decodeURIComponent(query.replace(/\+/g, " "))}`;
    const token = await hmac(signed);
    req = new Request(`${req.url}${query === undefined ? "?" : "&"}accessToken=${token}`, req);
  } else {
    const ts = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const headers = new Headers(req.headers);
    headers.set("X-Service-PublicKey", env.user);
    headers.set("X-Service-Authenticate-Timestamp", ts);
    headers.set("X-Service-Authenticate-Signature", await hmac(`${req.method}|${req.url}|${env.user}|${ts}`));
    req = new Request(req, { headers });
  }
  return fetch(req);
};

export function check(ok: boolean, what: string, got?: unknown): void {
  if (!ok) throw new Error(`${what}${got === undefined ? "" : `: got ${JSON.stringify(got)}`}`);
}

// sameJSON fails unless got and want are the same JSON value.
export function sameJSON(got: unknown, want: unknown, what: string): void {
  const norm = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(norm)
      : v !== null && typeof v === "object"
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, norm(x)]))
        : v;
  check(JSON.stringify(norm(got)) === JSON.stringify(norm(want)), `${what}: want ${JSON.stringify(want)}`, got);
}

// isJPEG reports whether bytes start as a JPEG does.
export async function isJPEG(b: Blob): Promise<boolean> {
  const head = new Uint8Array(await b.slice(0, 3).arrayBuffer());
  return head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff;
}

// run runs the steps in order, printing `ok <step>` for each; the first
// failure is printed with its step and ends the program with status 1.
export async function run(steps: [string, () => Promise<void>][]): Promise<void> {
  for (const [name, f] of steps) {
    try {
      await f();
    } catch (e) {
      console.error(`FAIL ${name}: ${e instanceof Error ? e.message : JSON.stringify(e)}`);
      process.exitCode = 1;
      return;
    }
    console.log(`ok ${name}`);
  }
}
