// Type-checked by TestOpenAPITypeScript (e2e/openapitools_test.go) against
// schema.ts, the types openapi-typescript generates from api/openapi.yaml:
// a metadata write takes any keys and any JSON values, nested, and what
// the API answers reads back under the same keys.
import type { components, operations } from "./schema";

type MetadataWrite = NonNullable<operations["mergeMetadata"]["requestBody"]>["content"]["application/json"];
type MetadataRead = operations["getMetadata"]["responses"][200]["content"]["application/json"];
type JSONValue = components["schemas"]["JSONValue"];

export const write: MetadataWrite = {
  color: "red",
  rating: 4.5,
  public: true,
  removed: null,
  tags: ["beach", "summer"],
  camera: { lens: { focal: 35, primes: [true, "f/1.8"] } },
};

export const replace: NonNullable<operations["replaceMetadata"]["requestBody"]>["content"]["application/json"] = write;

export function colour(m: MetadataRead): unknown {
  return m["color"];
}

export const exif: JSONValue | undefined = ({ exif: { Make: "Canon", FNumber: 2.8 } } as MetadataRead).exif;

export const listed: components["schemas"]["ImageEntry"] = { imageIdentifier: "0123", metadata: write };

export const nested: JSONValue = { a: [1, "two", { three: null }] };

// @ts-expect-error metadata is an object, not a string
export const notAnObject: MetadataWrite = "red";

// @ts-expect-error a JSON value is never a function
export const notJSON: JSONValue = () => 1;
